"""Working memory within a token budget (the seed's "compactor" design, durable and lossless).

``WorkingMemory`` (working.py) is the API; text.py detects content types, tags and search terms;
scoring.py holds the retention score; compaction.py plans the three-phase compaction; ranking.py
says how query and recall order items. Items live in the Store (both backends), searched through
a per-project inverted index (SQLite tables / Redis sorted sets) with BM25 computed once for both
(storage/search.py).
"""
