"""kindle.futures.Future (torch.futures.Future): a value that becomes available later. Kindle's
collectives return one from Work.get_future(); then() chains a callback, run when the value is
first waited for (collectives complete on their own thread; the callback runs on the waiter's)."""

__all__ = ["Future", "collect_all", "wait_all"]

_UNSET = object()


class Future:
    def __init__(self, *, devices=None):
        self._value = _UNSET
        self._error = None
        self._work = None      # a kindle.distributed Work whose completion gives the value
        self._parent = None    # then(): the future this one follows, and the callback
        self._callback = None

    @classmethod
    def _of_work(cls, work, value):
        f = cls()
        f._work, f._pending = work, value
        return f

    def done(self):
        if self._value is not _UNSET or self._error is not None:
            return True
        if self._work is not None:
            return self._work.is_completed()
        if self._parent is not None:
            return self._parent.done()
        return False

    def wait(self):
        if self._error is not None:
            raise self._error
        if self._value is _UNSET:
            try:
                if self._work is not None:
                    self._work.wait()
                    self._value = self._pending
                elif self._parent is not None:
                    self._parent.wait()
                    self._value = self._callback(self._parent)
                else:
                    raise RuntimeError("Future.wait: no value has been set on this future")
            except BaseException as e:
                self._error = e
                raise
        return self._value

    def value(self):
        return self.wait()

    def then(self, callback):
        f = Future()
        f._parent, f._callback = self, callback
        return f

    def add_done_callback(self, callback):
        self.wait()
        callback(self)

    def set_result(self, result):
        if self._value is not _UNSET:
            raise RuntimeError("Future.set_result: this future already has a value")
        self._value = result

    def set_exception(self, result):
        self._error = result


def collect_all(futures):
    f = Future()
    f.set_result(list(futures))
    for x in futures:
        x.wait()
    return f


def wait_all(futures):
    return [f.wait() for f in futures]
