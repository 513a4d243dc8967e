"""A correct backprop_engine written differently from the reference: Kahn's algorithm (count
each node's consumers, emit a node once all of them are emitted) instead of a depth-first
post-order, and the gradients summed into a dict before they are stored on the nodes."""

import numpy as np


class Node:  # the stub's, as given
    def __init__(self, data, parents=(), local_backward=None, op=""):
        self.data = np.asarray(data, dtype=np.float64)
        self.parents = tuple(parents)
        self.local_backward = local_backward
        self.op = op
        self.grad = None


def topological_order(root):
    consumers = {id(root): 0}
    seen, stack = {id(root): root}, [root]
    while stack:  # find every reachable node and count its uses
        node = stack.pop()
        for p in node.parents:
            consumers[id(p)] = consumers.get(id(p), 0) + 1
            if id(p) not in seen:
                seen[id(p)] = p
                stack.append(p)
    order, ready = [], [root]
    while ready:
        node = ready.pop()
        order.append(node)
        for p in node.parents:
            consumers[id(p)] -= 1
            if consumers[id(p)] == 0:
                ready.append(p)
    return order


def backward(root):
    order = topological_order(root)
    grads = {id(root): np.ones_like(root.data)}
    for node in order:
        if node.parents:
            for p, gp in zip(node.parents, node.local_backward(grads[id(node)])):
                grads[id(p)] = grads[id(p)] + gp if id(p) in grads else np.asarray(gp, dtype=np.float64)
    for node in order:
        g = grads[id(node)]
        node.grad = node.grad + g if not node.parents and node.grad is not None else g
