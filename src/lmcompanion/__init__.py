"""lmcompanion: the models, data pipeline and trainer behind the companion book.

Importing the package has no side effects: nothing trains, downloads or prints. Chapters import the
submodules they need (``from lmcompanion import experiments, runs, plots, tables``).
"""

__version__ = "0.1.0"
