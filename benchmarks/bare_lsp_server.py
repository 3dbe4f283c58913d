"""A bare pygls server with one custom request: the floor for LSP cold start."""

from pygls.lsp.server import LanguageServer

server = LanguageServer("bare", "0")


@server.feature("bare/ping")
def ping(ls: LanguageServer, params: object) -> dict[str, bool]:
    return {"ok": True}


if __name__ == "__main__":
    server.start_io()
