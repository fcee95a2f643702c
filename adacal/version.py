"""The version of adacal, in a module of its own so that any module can import it without importing the package
root (which loads subpackages on attribute access)."""

__version__ = "0.1.0"
