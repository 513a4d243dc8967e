"""Exercise 3 · backprop_engine: the engine itself, the chain rule over a whole graph.

Every other exercise writes one node's backward; here the nodes are given and you write what
calls them. A `Node` holds its value `data` (a numpy array), the nodes it was computed from
(`parents`, empty for a leaf) and its local backward: `node.local_backward(g)` takes
g = dL/d(node) and returns one gradient per parent, in the order of `parents`.

1. `topological_order(root)`: every node reachable from root, each exactly once, root first,
   and every node before each of its parents (so before the nodes it was computed from). A
   node that root does not depend on is not in the list.
2. `backward(root)`: root.grad = ones; then, in that order, each non-leaf node passes its
   gradient on: for each (parent, gp) of its local backward, the parent's gradient grows by
   gp. A node used several times (a fan-out, as x in x * x + x) collects the sum of every
   use; the order guarantees a node's gradient is complete (all its consumers have added
   their share) before its own local backward runs.
   Like PyTorch: a leaf's .grad accumulates over calls (a second backward adds to it, so
   training loops zero it), an intermediate's .grad is this call's gradient only (set it to
   zeros at the start of each call). A node that receives no gradient is never visited.
Graphs of 10,000 nodes must work: Python stops a recursion at about 1,000 calls deep, so
write both functions with a loop and a stack (or a queue), not recursion.

Shapes: node.grad has node.data's shape; a leaf's .grad is None until a backward reaches it.
Use numpy only. Check your work with
    minigrad exercise check backprop_engine
and then `--train`: the tiny GPT trains with your engine in place of minigrad's (each of its
ops becomes a Node whose local backward is the op's own).
"""

import numpy as np


class Node:
    """A value in the graph: data, the parents it was computed from, its local backward."""

    def __init__(self, data, parents=(), local_backward=None, op=""):
        self.data = np.asarray(data, dtype=np.float64)
        self.parents = tuple(parents)
        self.local_backward = local_backward  # g -> one gradient per parent (None for a leaf)
        self.op = op
        self.grad = None

    def __repr__(self):
        return f"Node({self.op or 'leaf'}, shape={self.data.shape})"


# The ops (given): each builds a Node with its local backward, d(out)/d(each parent) times g.


def add(a, b):
    """z = a + b        da = g,   db = g"""
    return Node(a.data + b.data, (a, b), lambda g: (g, g), "add")


def mul(a, b):
    """z = a * b        da = g * b,   db = g * a"""
    return Node(a.data * b.data, (a, b), lambda g: (g * b.data, g * a.data), "mul")


def tanh(a):
    """z = tanh(a)      da = g * (1 - z^2)"""
    z = np.tanh(a.data)
    return Node(z, (a,), lambda g: (g * (1 - z**2),), "tanh")


def total(a):
    """z = sum of a (a scalar)      da = g, broadcast to a's shape"""
    return Node(a.data.sum(), (a,), lambda g: (np.broadcast_to(g, a.data.shape).copy(),), "sum")


def topological_order(root):
    """The nodes reachable from root, each once, root first, every node before its parents."""
    # Your code.
    raise NotImplementedError


def backward(root):
    """Fill .grad of every node reachable from root with d root / d node (leaves accumulate)."""
    # Your code.
    raise NotImplementedError
