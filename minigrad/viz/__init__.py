"""Seeing inside: draw the computation graph, trace a backward pass, catch the first NaN,
plot attention maps and training curves.

    from minigrad.viz import draw_graph, trace_backward, detect_anomaly, plot_attention
    draw_graph(loss, model=model, depth=1).save("model.svg")
    print(trace_backward(loss))
    plot_training("runs/gpt", path="curves.png")
    show(fig, "loss")   # inline in a notebook; in a script saved to $MINIGRAD_FIGURES if set

graphviz and matplotlib are imported only when something is drawn, so `import minigrad` stays
quick (matplotlib is the optional extra `minigrad[plot]`).
"""

from ._names import describe_scope
from .anomaly import AnomalyError, detect_anomaly
from .explore import explore
from .figures import show, use_script_backend
from .grads import keep_grads
from .graph import draw_graph
from .pipelines import register_pipeline
from .plots import plot_attention, plot_training
from .render import GraphvizNotFoundWarning, save_graph
from .trace import BackwardStep, BackwardTrace, GradSent, trace_backward

__all__ = [
    "AnomalyError", "BackwardStep", "BackwardTrace", "GradSent", "GraphvizNotFoundWarning",
    "describe_scope", "detect_anomaly", "draw_graph", "explore", "keep_grads", "plot_attention",
    "plot_training", "register_pipeline", "save_graph", "show", "trace_backward",
    "use_script_backend",
]
