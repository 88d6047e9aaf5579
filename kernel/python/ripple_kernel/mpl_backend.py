"""ripple's matplotlib backend (MPLBACKEND=module://_ripple_mpl_backend in
ripple's kernels), after Jupyter's inline backend (matplotlib-inline):
figures draw with Agg, and ``plt.show()`` sends each open figure as an
``executionContext/displayData`` of the running statement (its PNG) and
closes it. Loaded by engine.py's finder only when matplotlib asks for it.
"""

import sys

from matplotlib._pylab_helpers import Gcf
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase


def new_figure_manager(num, *args, FigureClass=None, **kwargs):
    from matplotlib.figure import Figure

    fig = (FigureClass or Figure)(*args, **kwargs)
    return new_figure_manager_given_figure(num, fig)


def new_figure_manager_given_figure(num, figure):
    return FigureManager(FigureCanvas(figure), num)


def _engine():
    """The engine of this kernel (its display finder holds it)."""
    for finder in sys.meta_path:
        if type(finder).__name__ == "_DisplayFinder":
            return finder.engine
    return None


def show(block=None):
    """Display every open figure (PNG) under the running statement, then close them."""
    engine = _engine()
    try:
        for manager in Gcf.get_all_fig_managers():
            if engine is not None:
                engine.display(manager.canvas.figure, mimes=("image/png",))
    finally:
        Gcf.destroy_all()
