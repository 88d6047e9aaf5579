"""ripple's matplotlib backend (MPLBACKEND=module://ripple_kernel.mpl_backend
in ripple's kernels, display.py), after Jupyter's inline backend
(matplotlib-inline): figures draw with Agg, and ``plt.show()`` sends each
open figure as an ``executionContext/displayData`` of the running statement
(its PNG) and closes it. Imported only when matplotlib asks for it.
"""

from __future__ import annotations

from typing import Any, Optional

from matplotlib._pylab_helpers import Gcf
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

from . import display

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase


def new_figure_manager(num: int, *args: Any, FigureClass: Any = None, **kwargs: Any) -> Any:
    from matplotlib.figure import Figure

    fig = (FigureClass or Figure)(*args, **kwargs)
    return new_figure_manager_given_figure(num, fig)


def new_figure_manager_given_figure(num: int, figure: Any) -> Any:
    return FigureManager(FigureCanvas(figure), num)


def show(block: Optional[bool] = None) -> None:
    """Display every open figure (PNG) under the running statement, then close them."""
    shows = display.current()
    try:
        for manager in Gcf.get_all_fig_managers():
            if shows is not None:
                shows.display(manager.canvas.figure, mimes=("image/png",))
    finally:
        Gcf.destroy_all()
