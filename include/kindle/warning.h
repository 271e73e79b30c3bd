// Warnings from the C++ core (torch's TORCH_WARN): something worth telling that is not an error.
// The Python front end turns them into UserWarning (an exception where warnings are errors); a
// C++ program gets them on stderr unless it installs its own handler.
#pragma once
#include <string>

namespace kindle {
using WarningHandler = void (*)(const std::string& message);
void warn(const std::string& message);
WarningHandler set_warning_handler(WarningHandler handler);  // returns the previous handler
}  // namespace kindle
