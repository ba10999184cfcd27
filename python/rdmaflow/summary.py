"""tf.summary: TensorBoard summaries are not written by rdmaflow yet (its
chief writes JSON-lines metrics, --metrics_out); each name raises
NotImplementedError saying so, rather than doing nothing."""


def _missing(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            "tf.summary.%s: rdmaflow does not write TensorBoard summaries "
            "yet" % name)
    fn.__name__ = name
    return fn


scalar = _missing("scalar")
histogram = _missing("histogram")
image = _missing("image")
merge_all = _missing("merge_all")
merge = _missing("merge")
FileWriter = _missing("FileWriter")
