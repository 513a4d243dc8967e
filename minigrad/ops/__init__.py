"""The differentiable ops, one `Function` subclass each, grouped by kind."""
