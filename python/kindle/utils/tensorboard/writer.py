"""SummaryWriter: torch.utils.tensorboard.SummaryWriter's API over TensorBoard's event writer."""
import os
import socket
import time
import warnings
from datetime import datetime

from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import summary as _s

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes Event protocol buffers to an event file in `log_dir` (asynchronously, flushed every
    `flush_secs` seconds and at close)."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self._writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        return self._writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self._writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(Event(summary=summary), global_step, walltime)

    def flush(self):
        self._writer.flush()

    def close(self):
        self._writer.close()

    def reopen(self):
        self._writer.reopen()


class SummaryWriter:
    """Writes entries for TensorBoard to event files in `log_dir` (default
    runs/<date>_<time>_<hostname><comment>), as torch.utils.tensorboard.SummaryWriter does."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", stamp + "_" + socket.gethostname() + comment)
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, filename_suffix
        self.file_writer = None
        self.all_writers = {}
        self._get_file_writer()
        self.default_bins = "tensorflow"

    def _get_file_writer(self):
        if self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:  # later events at or past this step replace the earlier ones
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step, session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        return self.log_dir

    # ---- values

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        self._get_file_writer().add_summary(_s.scalar(tag, scalar_value, new_style, double_precision), global_step,
                                            walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Each tag in its own run: log_dir/<main_tag>_<tag>, all under the chart main_tag."""
        walltime = time.time() if walltime is None else walltime
        base = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            path = os.path.join(base, main_tag.replace("/", "_") + "_" + tag)
            w = self.all_writers.get(path)
            if w is None:
                w = FileWriter(path, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[path] = w
            w.add_summary(_s.scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        from tensorboard.compat.proto.summary_pb2 import Summary
        from tensorboard.util import tensor_util
        proto = tensor_util.make_tensor_proto(_s.make_np(tensor))
        self._get_file_writer().add_summary(Summary(value=[Summary.Value(tag=tag, tensor=proto)]), global_step,
                                            walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        self._get_file_writer().add_summary(_s.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        self._get_file_writer().add_summary(_s.image(tag, img_tensor, dataformats=dataformats), global_step,
                                            walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        self._get_file_writer().add_summary(_s.image(tag, img_tensor, dataformats=dataformats), global_step,
                                            walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        if isinstance(figure, (list, tuple)):
            import numpy as np
            images = np.stack([_s.figure_to_image(f, close) for f in figure])
            self.add_images(tag, images, global_step, walltime, dataformats="NHWC")
        else:
            self.add_image(tag, _s.figure_to_image(figure, close), global_step, walltime, dataformats="HWC")

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._get_file_writer().add_summary(_s.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None):
        """A run (log_dir/<run_name or the time>) with the hyperparameters and the metric values."""
        if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = _s.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w:
            for s in (exp, ssi, sei):
                w.file_writer.add_summary(s, global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """The model's dataflow on input_to_model, for TensorBoard's Graphs tab (traced as
        kindle.jit.trace records: the path the example takes)."""
        from ._graph import build_graph
        graph, run_metadata = build_graph(model, input_to_model, verbose, use_strict_trace)
        writer = self._get_file_writer()
        writer.add_event(Event(graph_def=graph.SerializeToString()))
        writer.add_event(Event(tagged_run_metadata=TaggedRunMetadata(tag="step1",
                                                                     run_metadata=run_metadata.SerializeToString())))

    def add_custom_scalars(self, layout):
        warnings.warn("kindle.utils.tensorboard: add_custom_scalars is not supported; nothing was written",
                      UserWarning, stacklevel=2)

    # ---- files

    def flush(self):
        for w in self.all_writers.values():
            w.flush()

    def close(self):
        for w in self.all_writers.values():
            w.flush()
            w.close()
        self.file_writer = None
        self.all_writers = {}

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
