"""SummaryWriter: torch.utils.tensorboard.SummaryWriter's API over TensorBoard's event writer."""
import os
import socket
import time
from datetime import datetime

from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import summary as _s
from ._embedding import write_embedding, write_projector_config
from ._utils import ShapeError

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

    def add_graph(self, graph_profile, walltime=None):
        """A (GraphDef, RunMetadata) pair: the graph, then its step stats tagged "step1"."""
        graph, run_metadata = graph_profile
        self.add_event(Event(graph_def=graph.SerializeToString()), None, walltime)
        trm = TaggedRunMetadata(tag="step1", run_metadata=run_metadata.SerializeToString())
        self.add_event(Event(tagged_run_metadata=trm), None, walltime)

    def add_onnx_graph(self, graph, walltime=None):
        self.add_event(Event(graph_def=graph.SerializeToString()), None, walltime)

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
        self._projector_config = None  # every embedding this writer added, for projector_config.pbtxt
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

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                          global_step=None, walltime=None):
        """A histogram already binned: bucket_limits are the buckets' right edges (the first
        bucket's left edge is `min`), bucket_counts their counts."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._get_file_writer().add_summary(
            _s.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts), global_step,
            walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        self._get_file_writer().add_summary(_s.image(tag, img_tensor, dataformats=dataformats), global_step,
                                            walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        self._get_file_writer().add_summary(_s.image(tag, img_tensor, dataformats=dataformats), global_step,
                                            walltime)

    def add_image_with_boxes(self, tag, img_tensor, box_tensor, global_step=None, walltime=None, rescale=1,
                             dataformats="CHW", labels=None):
        """An image with boxes (N, 4) of (xmin, ymin, xmax, ymax) pixels drawn on it, each with
        its label when there are as many labels as boxes (otherwise none, as in torch)."""
        boxes = _s.make_np(box_tensor)
        if labels is not None:
            if isinstance(labels, str):
                labels = [labels]
            if len(labels) != boxes.shape[0]:
                labels = None
        self._get_file_writer().add_summary(
            _s.image_boxes(tag, img_tensor, boxes, rescale=rescale, dataformats=dataformats, labels=labels),
            global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        if isinstance(figure, (list, tuple)):
            import numpy as np
            images = np.stack([_s.figure_to_image(f, close) for f in figure])
            self.add_images(tag, images, global_step, walltime, dataformats="NHWC")
        else:
            self.add_image(tag, _s.figure_to_image(figure, close), global_step, walltime, dataformats="HWC")

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None):
        """An (N, T, C, H, W) batch of clips (uint8 0..255 or float 0..1) as one animated GIF."""
        self._get_file_writer().add_summary(_s.video(tag, vid_tensor, fps), global_step, walltime)

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        """A (1, L) clip of samples in [-1, 1] as a WAV file."""
        self._get_file_writer().add_summary(_s.audio(tag, snd_tensor, sample_rate=sample_rate), global_step,
                                            walltime)

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
        self._get_file_writer().add_graph(build_graph(model, input_to_model, verbose, use_strict_trace))

    def add_onnx_graph(self, prototxt):
        """The graph of the ONNX model file `prototxt` (needs the onnx package)."""
        from ._onnx_graph import load_onnx_graph
        self._get_file_writer().add_onnx_graph(load_onnx_graph(prototxt))

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None):
        """Data for TensorBoard's Projector: mat (N, D) one point a row, metadata N labels (or
        rows of len(metadata_header) columns), label_img (N, C, H, W) thumbnails in [0, 1].
        Written as files under log_dir/<step>/<tag> and listed in log_dir/projector_config.pbtxt
        (rewritten with all this writer's embeddings each call)."""
        from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
        mat = _s.make_np(mat)
        if metadata is not None and hasattr(metadata, "tolist"):  # labels of an array or a tensor as numbers
            metadata = metadata.tolist()
        label_img = None if label_img is None else _s.make_np(label_img)
        log_dir = self._get_file_writer().get_logdir()
        info = write_embedding(log_dir, mat, metadata, label_img, global_step, tag, metadata_header)
        if self._projector_config is None:
            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.append(info)
        write_projector_config(log_dir, self._projector_config)

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127, weights=None,
                     walltime=None):
        """Precision-recall curve of binary `labels` against `predictions` (probabilities in [0, 1])."""
        self._get_file_writer().add_summary(
            _s.pr_curve(tag, labels, predictions, num_thresholds, weights), global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts, true_negative_counts,
                         false_negative_counts, precision, recall, global_step=None, num_thresholds=127,
                         weights=None, walltime=None):
        """A precision-recall curve already computed: the counts, precision and recall per threshold."""
        self._get_file_writer().add_summary(
            _s.pr_curve_raw(tag, true_positive_counts, false_positive_counts, true_negative_counts,
                            false_negative_counts, precision, recall, num_thresholds, weights), global_step,
            walltime)

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled"):
        """A Custom Scalars chart plotting the scalar `tags` together."""
        self._get_file_writer().add_summary(_s.custom_scalars({category: {title: ["Multiline", tags]}}))

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled"):
        """A Custom Scalars chart of tags [value, lower bound, upper bound] as a line in a band."""
        if len(tags) != 3:
            raise ShapeError(f"Expected 3 tags, got {len(tags)}.")
        self._get_file_writer().add_summary(_s.custom_scalars({category: {title: ["Margin", tags]}}))

    def add_custom_scalars(self, layout):
        """The Custom Scalars layout {category: {chart title: ["Multiline" or "Margin", tags]}}.
        TensorBoard reads one layout a run: call it once per writer (at any time)."""
        self._get_file_writer().add_summary(_s.custom_scalars(layout))

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None, walltime=None):
        """A 3D mesh or point cloud: vertices (B, N, 3), colors (B, N, 3) 0..255, faces (B, F, 3)
        vertex indices; config_dict: Three.js settings (camera, lights, material)."""
        self._get_file_writer().add_summary(_s.mesh(tag, vertices, colors, faces, config_dict), global_step,
                                            walltime)

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
