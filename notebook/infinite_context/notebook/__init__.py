"""IPython extension (``%load_ext infinite_context.notebook``); the magics arrive with the notebook issue."""
