"""``infinite-context proxy``: live endless mode between Claude Code and the Anthropic API.

``app`` is the ASGI application (uvicorn serves it; httpx2 forwards), ``process`` runs it as one
detached process per user (pid/lock file in the data folder), ``wiring`` adds it to Claude Code's
settings (``install claude-code --endless``) and checks it (``doctor``). The transform itself is
core (``core.transcript.live``). Nothing here is imported by the other entry points: uvicorn and
httpx2 load only when a proxy runs.
"""
