"""The exec sandbox: .env parsing, the bubblewrap launch, running under a deadline, bounded capture, previews.

The tool itself (parameters, checks, the result dict) lives in `cireil.runtime.tools.exec`.
"""
