"""The IPython-facing layer: extension load/unload, magics, widget forms. The only layer importing IPython."""
