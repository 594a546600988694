"""Public home of the parameter model, for tools defined in Python: `from cireil.params import Params, String`."""

from .runtime.base.params import AnyOf, Array, Boolean, Field, Integer, Number, Object, Params, String

__all__ = ["AnyOf", "Array", "Boolean", "Field", "Integer", "Number", "Object", "Params", "String"]
