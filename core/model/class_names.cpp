#include "model/class_names.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/error.h"
#include "util/resource_paths.h"

namespace adtree::model {

std::vector<std::string> parse_class_names(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    return (j.is_object() ? j.at("classes") : j).get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception&) {
  }
  std::vector<std::string> names;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find_first_not_of(" \t\r"), b = line.find_last_not_of(" \t\r");
    if (a != std::string::npos) names.push_back(line.substr(a, b - a + 1));
  }
  return names;
}

std::vector<std::string> class_names(const std::string& given, int64_t n,
                                     std::vector<std::string>& warnings) {
  const std::string path = given.empty() ? util::find_data_file("imagenet/classes.json") : given;
  std::vector<std::string> names;
  if (!path.empty()) {
    std::ifstream in(path);
    if (!in && !given.empty()) throw Error("class names " + path + ": file not found");
    names = parse_class_names(std::string(std::istreambuf_iterator<char>(in), {}));
  }
  if (int64_t(names.size()) == n) return names;
  if (!given.empty()) {
    throw Error("class names " + path + ": " + std::to_string(names.size()) +
                " names, the model has " + std::to_string(n) + " classes");
  }
  warnings.push_back((path.empty() ? std::string("no ImageNet class list found")
                                   : path + " has " + std::to_string(names.size()) + " names") +
                     ", the model " + std::to_string(n) +
                     " classes: naming them 'class 0' .. 'class " + std::to_string(n - 1) + "'");
  names.clear();
  for (int64_t i = 0; i < n; ++i) names.push_back("class " + std::to_string(i));
  return names;
}

}  // namespace adtree::model
