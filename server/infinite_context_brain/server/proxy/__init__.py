"""``infinite-context proxy``: live endless mode between Claude Code and the Anthropic API.

By concern: ``app`` is the ASGI application (uvicorn serves it; httpx2 forwards) and ``guard`` the
rules a request must meet; ``serve`` runs it in this process on a socket it binds first, with the
head deadline of ``protocol``; ``process`` starts it detached, stops it and keeps it up for the
SessionStart hook and editors; ``status`` finds the running one; ``identity`` proves the listener
on the port is this user's proxy; ``config`` chooses the port and upstream; ``files`` keeps its
private files; ``store`` links the transform to the store; ``wiring`` adds it to Claude Code's
settings (``install claude-code --endless``) and checks it (``doctor``). The transform itself is
core (``core.transcript.live``). Nothing here is imported by the other entry points: uvicorn and
httpx2 load only when a proxy runs.
"""
