"""The pygls language server the VS Code extension talks to (``infinite-context lsp``)."""
