"""Seeing inside: draw the computation graph, trace a backward pass, catch the first NaN.

    from minigrad.viz import draw_graph, trace_backward, detect_anomaly
    draw_graph(loss, model=model, depth=1).save("model.svg")
    print(trace_backward(loss))

graphviz is imported only when something is drawn, so `import minigrad` stays quick.
"""

from .anomaly import AnomalyError, detect_anomaly
from .graph import draw_graph
from .render import GraphvizNotFoundWarning, save_graph
from .trace import BackwardStep, BackwardTrace, GradSent, trace_backward

__all__ = [
    "AnomalyError", "BackwardStep", "BackwardTrace", "GradSent", "GraphvizNotFoundWarning",
    "detect_anomaly", "draw_graph", "save_graph", "trace_backward",
]
