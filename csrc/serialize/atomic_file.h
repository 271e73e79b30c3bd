// Atomic replacement of a file, as every checkpoint write does it (both front ends, both formats).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace kindle::files {

// Replaces `path` with what `write` writes to the file descriptor it is given: the bytes go to a
// temporary file next to the target ".<name>.<host>.<pid>.<random>.tmp", which is fsync'ed, given
// the mode an ordinary open() would (an existing file's, else 0666 & ~umask) and renamed over the
// target; the folder is fsync'ed after. On any failure (an exception from `write` included, which is
// rethrown) the temporary file is removed and the old file is left as it was. A path that is a
// symlink is written through (its final target is replaced, the link kept). Temporary files of
// earlier writes to the same target whose process has died (same host, pid not running) are
// removed first. Errors of the system raise kindle::OSError with the errno.
void atomic_write(const std::string& path, const std::function<void(int fd)>& write, const char* who = "kindle.save");

// The temporary file name a write of `base` by process `pid` uses (random part fresh each call).
std::string temp_name(const std::string& base, int64_t pid);

}  // namespace kindle::files
