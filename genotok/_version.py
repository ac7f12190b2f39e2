"""The package version, in a module of its own so that any room can read it without importing the
package root (which imports every room)."""

__version__ = "0.1.0"
