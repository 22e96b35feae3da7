"""mx.notebook.callback: callbacks for Module.fit / FeedForward.fit that record training in
pandas DataFrames (PandasLogger) or redraw a bokeh chart in a Jupyter notebook as training
goes (LiveLearningCurve, LiveTimeSeries); `args_wrapper` merges their fit() arguments.

pandas and bokeh are optional: they are imported when a callback needing them is created,
and their absence raises an ImportError naming the package.
"""
import datetime
import time
from collections import defaultdict

__all__ = ['PandasLogger', 'LiveBokehChart', 'LiveTimeSeries', 'LiveLearningCurve',
           'args_wrapper']


def _optional(module, user):
    """The optional package `module`, imported; ImportError naming it and `user` if absent."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as err:
        package = module.split('.')[0]
        raise ImportError('%s needs the %r package, which is not installed (pip install %s): %s'
                          % (user, package, package, err)) from None


def _add_new_columns(dataframe, metrics):
    """Add a column (of None) to `dataframe` for each key of `metrics` it lacks."""
    for col in set(metrics.keys()) - set(dataframe.columns):
        dataframe[col] = None


def _extend(base, new):
    """Append to list `base` the items of `new` past its length (`base` is a prefix of `new`)."""
    base.extend(new[len(base):])


def _metrics_of(param):
    """name -> value of the callback parameter's eval_metric, which is then reset (as MXNet's
    notebook callbacks do, so each row covers the batches since the last one)."""
    if param.eval_metric is None:
        return {}
    metrics = dict(param.eval_metric.get_name_value())
    param.eval_metric.reset()
    return metrics


class PandasLogger:
    """Logs a training run into three pandas DataFrames: `train_df` (a row every `frequent`
    batches: the metrics since the previous row, speeds, elapsed time, minibatch_count, epoch),
    `eval_df` (a row per evaluation) and `epoch_df` (a row per epoch: elapsed and epoch_time).

    `fit(..., **logger.callback_args())` installs train_cb, eval_cb and epoch_cb.
    """

    def __init__(self, batch_size, frequent=50):
        pd = _optional('pandas', 'mx.notebook.callback.PandasLogger')
        self.batch_size = batch_size
        self.frequent = frequent
        self._dataframes = {'train': pd.DataFrame(), 'eval': pd.DataFrame(),
                            'epoch': pd.DataFrame()}
        self.last_time = time.time()
        self.start_time = datetime.datetime.now()
        self.last_epoch_time = datetime.datetime.now()

    @property
    def train_df(self):
        """Training metrics, a row every `frequent` batches."""
        return self._dataframes['train']

    @property
    def eval_df(self):
        """Validation metrics, a row per evaluation (end of epoch)."""
        return self._dataframes['eval']

    @property
    def epoch_df(self):
        """Timing per epoch."""
        return self._dataframes['epoch']

    @property
    def all_dataframes(self):
        """{'train': ..., 'eval': ..., 'epoch': ...}."""
        return self._dataframes

    def elapsed(self):
        """Time since the logger was made (a datetime.timedelta)."""
        return datetime.datetime.now() - self.start_time

    def append_metrics(self, metrics, df_name):
        """Append the dict `metrics` as a row of DataFrame `df_name`, adding missing columns."""
        dataframe = self._dataframes[df_name]
        _add_new_columns(dataframe, metrics)
        dataframe.loc[len(dataframe)] = metrics

    def train_cb(self, param):
        """batch_end_callback: a train row every `frequent` batches."""
        if param.nbatch % self.frequent == 0:
            self._process_batch(param, 'train')

    def eval_cb(self, param):
        """eval_end_callback: an eval row."""
        self._process_batch(param, 'eval')

    def _process_batch(self, param, df_name):
        now = time.time()
        metrics = _metrics_of(param)
        try:
            speed = self.frequent / (now - self.last_time)
        except ZeroDivisionError:
            speed = float('inf')
        # MXNet's names, kept as they are: batches_per_sec is records a second and the reverse
        metrics['batches_per_sec'] = speed * self.batch_size
        metrics['records_per_sec'] = speed
        metrics['elapsed'] = self.elapsed()
        metrics['minibatch_count'] = param.nbatch
        metrics['epoch'] = param.epoch
        self.append_metrics(metrics, df_name)
        self.last_time = now

    def epoch_cb(self, *_epoch_end_args):
        """epoch_end_callback: an epoch row (elapsed, epoch_time). fit()'s arguments (epoch,
        symbol, arg_params, aux_params) are accepted and not used."""
        now = datetime.datetime.now()
        self.append_metrics({'elapsed': self.elapsed(),
                             'epoch_time': now - self.last_epoch_time}, 'epoch')
        self.last_epoch_time = now

    def callback_args(self):
        """fit() keyword arguments installing every callback of this logger."""
        return {'batch_end_callback': self.train_cb, 'eval_end_callback': self.eval_cb,
                'epoch_end_callback': self.epoch_cb}


def _bokeh():
    bokeh = _optional('bokeh.plotting', 'mx.notebook.callback\'s live charts')
    import bokeh.io  # noqa: F401  (present once bokeh.plotting imported)
    return bokeh


def _figure(bokeh, **params):
    """A bokeh figure (bokeh.plotting.figure; Figure in bokeh < 3)."""
    make = getattr(bokeh.plotting, 'figure', None) or bokeh.plotting.Figure
    return make(**params)


def _legend(bokeh, label):
    """The glyph keyword giving a legend entry (legend_label since bokeh 1.4, legend before)."""
    version = tuple(int(v) for v in bokeh.__version__.split('.')[:2] if v.isdigit())
    return {'legend_label': label} if version >= (1, 4) else {'legend': label}


class LiveBokehChart:
    """Base of the charts drawn in a Jupyter notebook with bokeh and redrawn as training goes
    (at most every `display_freq` seconds, and after each evaluation). Subclasses define
    setup_chart() (draw, return the notebook handle) and update_chart_data()."""

    def __init__(self, pandas_logger, metric_name, display_freq=10, batch_size=None,
                 frequent=50):
        self._bokeh = _bokeh()
        self.pandas_logger = pandas_logger if pandas_logger else \
            PandasLogger(batch_size=batch_size, frequent=frequent)
        self.display_freq = display_freq
        self.last_update = time.time()
        self.metric_name = metric_name
        self._bokeh.io.output_notebook()
        self.handle = self.setup_chart()

    def setup_chart(self):
        """Draw the chart; return its bokeh notebook handle."""
        raise NotImplementedError('Incomplete base class: LiveBokehChart must be sub-classed')

    def update_chart_data(self):
        """Bring the chart's data up to date."""
        raise NotImplementedError('Incomplete base class: LiveBokehChart must be sub-classed')

    def interval_elapsed(self):
        """Whether display_freq seconds passed since the last redraw."""
        return time.time() - self.last_update > self.display_freq

    def _push_render(self):
        self._bokeh.io.push_notebook(handle=self.handle)
        self.last_update = time.time()

    def _do_update(self):
        self.update_chart_data()
        self._push_render()

    def batch_cb(self, param):
        """batch_end_callback: redraw when display_freq seconds passed."""
        if self.interval_elapsed():
            self._do_update()

    def eval_cb(self, param):
        """eval_end_callback: redraw."""
        self._do_update()

    def callback_args(self):
        """fit() keyword arguments installing this chart's callbacks."""
        return {'batch_end_callback': self.batch_cb, 'eval_end_callback': self.eval_cb}


class LiveTimeSeries(LiveBokehChart):
    """A line of values against elapsed time: `update_chart_data(value)` adds a point and
    redraws. `fig_params` go to the bokeh figure."""

    def __init__(self, **fig_params):
        bokeh = _bokeh()
        self.fig = _figure(bokeh, x_axis_type='datetime', x_axis_label='Elapsed time',
                           **fig_params)
        super().__init__(None, None)

    def setup_chart(self):
        self.start_time = datetime.datetime.now()
        self.x_axis_val = []
        self.y_axis_val = []
        self.line = self.fig.line(self.x_axis_val, self.y_axis_val)
        return self._bokeh.plotting.show(self.fig, notebook_handle=True)

    def elapsed(self):
        """Time since the chart was drawn."""
        return datetime.datetime.now() - self.start_time

    def update_chart_data(self, value=None):
        """Add `value` at the elapsed time and redraw (no value: redraw only)."""
        if value is not None:
            self.x_axis_val.append(self.elapsed())
            self.y_axis_val.append(value)
            self.line.data_source.data = {'x': list(self.x_axis_val),
                                          'y': list(self.y_axis_val)}
        self._bokeh.io.push_notebook(handle=self.handle)
        self.last_update = time.time()

    def _do_update(self):
        self.update_chart_data()


class LiveLearningCurve(LiveBokehChart):
    """Training (dotted, every `frequent` batches) and validation (green, per evaluation)
    values of metric `metric_name` against training time, redrawn as training goes."""

    def __init__(self, metric_name, display_freq=10, frequent=50):
        self.frequent = frequent
        self.start_time = datetime.datetime.now()
        self._data = {'train': {'elapsed': []}, 'eval': {'elapsed': []}}
        super().__init__(None, metric_name, display_freq, frequent=frequent)

    def setup_chart(self):
        bokeh = self._bokeh
        self.fig = _figure(bokeh, x_axis_type='datetime', x_axis_label='Training time')
        self.x_axis_val1, self.y_axis_val1 = [], []
        self.train1 = self.fig.line(self.x_axis_val1, self.y_axis_val1, line_dash='dotted',
                                    alpha=0.3, **_legend(bokeh, 'train'))
        self.train2 = self.fig.scatter(self.x_axis_val1, self.y_axis_val1, size=1.5,
                                       line_alpha=0.3, fill_alpha=0.3,
                                       **_legend(bokeh, 'train'))
        self.train2.visible = False          # shown instead of the line once data grows
        self.x_axis_val2, self.y_axis_val2 = [], []
        self.valid1 = self.fig.line(self.x_axis_val2, self.y_axis_val2, line_color='green',
                                    line_width=2, **_legend(bokeh, 'validation'))
        self.valid2 = self.fig.scatter(self.x_axis_val2, self.y_axis_val2,
                                       line_color='green', line_width=2)
        self.fig.legend.location = 'bottom_right'
        self.fig.yaxis.axis_label = self.metric_name
        return bokeh.plotting.show(self.fig, notebook_handle=True)

    def batch_cb(self, param):
        if param.nbatch % self.frequent == 0:
            self._process_batch(param, 'train')
        if self.interval_elapsed():
            self._do_update()

    def eval_cb(self, param):
        self._process_batch(param, 'eval')
        self._do_update()

    def _process_batch(self, param, df_name):
        """Record the metrics (since the last record) at the elapsed training time."""
        metrics = _metrics_of(param)
        metrics['elapsed'] = datetime.datetime.now() - self.start_time
        for key, value in metrics.items():
            self._data[df_name].setdefault(key, []).append(value)

    def update_chart_data(self):
        """Copy the new points into the glyphs' data."""
        for df_name, xs, ys, glyphs in (
                ('train', self.x_axis_val1, self.y_axis_val1, (self.train1, self.train2)),
                ('eval', self.x_axis_val2, self.y_axis_val2, (self.valid1, self.valid2))):
            data = self._data[df_name]
            if data['elapsed']:
                _extend(xs, data['elapsed'])
                _extend(ys, data.get(self.metric_name, []))
                for glyph in glyphs:
                    glyph.data_source.data = {'x': list(xs), 'y': list(ys)}
        if len(self.x_axis_val2) > 10:
            self.train1.visible = False
            self.train2.visible = True


def args_wrapper(*args):
    """fit() keyword arguments for several callback objects (PandasLogger, LiveLearningCurve,
    ...): each argument name -> the list of their callbacks."""
    out = defaultdict(list)
    for callback in args:
        for key, value in callback.callback_args().items():
            out[key].append(value)
    return dict(out)
