"""minigrad.nn: modules, layers, attention and transformer blocks built on minigrad tensors."""

from .module import Module, ModuleList, Parameter, Sequential
