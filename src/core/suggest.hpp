#pragma once
/// "Did you mean" for names given on the command line: the closest known name by edit distance.
#include <string>
#include <string_view>
#include <vector>

namespace normcheck {

/// Edit distance with adjacent transpositions (optimal string alignment), case-insensitive.
int edit_distance(std::string_view a, std::string_view b);

/// "; did you mean 'x'?" for the candidate closest to `given` when it is within max(2, |given| / 3)
/// edits (ties: the first), else "".
std::string did_you_mean(std::string_view given, const std::vector<std::string>& candidates);

}  // namespace normcheck
