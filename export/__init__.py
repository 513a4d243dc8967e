"""Export minigrad models to PyTorch, train them there, bring the weights back."""
