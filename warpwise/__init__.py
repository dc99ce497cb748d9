"""warpwise: a CUDA performance assistant for the editor and the command line."""

__version__ = "0.1.0"
