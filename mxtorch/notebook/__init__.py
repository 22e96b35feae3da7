"""mx.notebook: training callbacks that log metrics to pandas DataFrames (PandasLogger) and
draw live bokeh charts in a Jupyter notebook (LiveLearningCurve, LiveTimeSeries). pandas and
bokeh are imported when a callback that needs them is made."""
from . import callback  # noqa: F401
