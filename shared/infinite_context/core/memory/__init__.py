"""Working memory within a token budget (the seed's "compactor" design, durable and lossless).

``WorkingMemory`` (working.py) is the API; text.py detects content types, tags and search terms;
scoring.py holds the retention score; compaction.py plans the three-phase compaction. Items live
in the Store (both backends), searched through a real index (FTS5 / a Redis inverted index).
"""
