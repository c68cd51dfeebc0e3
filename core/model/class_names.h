// Class names for a class-conditional model's text.json (LlamaGen c2i, MAR): a JSON list (or an
// object with "classes"), else one name per line.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace adtree::model {

std::vector<std::string> parse_class_names(const std::string& text);

// `given` (a file), else the shipped ImageNet list. A default list that does not hold `n` names
// gives "class 0" .. "class n-1" and a line in `warnings` (tools/convert_llamagen.py's rule); a
// given one is an error.
std::vector<std::string> class_names(const std::string& given, int64_t n,
                                     std::vector<std::string>& warnings);

}  // namespace adtree::model
