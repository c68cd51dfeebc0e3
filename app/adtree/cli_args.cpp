#include "cli_args.h"

#include <iostream>
#include <sstream>
#include <stdexcept>

#include "util/error.h"

namespace adtree::cli {

std::vector<std::string> split_list(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, sep);) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Args::Args(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

// A second option of one name would silently replace the first (a verb's own option and a shared
// group's): a programming error, caught on every run of the verb, so its tests catch it.
void Args::declare(const std::string& name) {
  if (opts_.count(name)) throw std::logic_error("option --" + name + " is declared twice");
  order_.push_back(name);
}

Args& Args::option(const std::string& name, const std::string& metavar, const std::string& help,
                   const std::string& def) {
  declare(name);
  opts_[name] = Opt{metavar, help, def, false};
  return *this;
}

Args& Args::flag(const std::string& name, const std::string& help) {
  declare(name);
  opts_[name] = Opt{"", help, "", true};
  return *this;
}

bool Args::parse(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::cout << usage();
      return false;
    }
    if (a.rfind("--", 0) != 0) {
      throw Error("unexpected argument '" + a + "' (see 'adtree " + command_ + " --help')");
    }
    std::string name = a.substr(2), value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    auto it = opts_.find(name);
    if (it == opts_.end()) {
      throw Error("unknown option '--" + name + "' (see 'adtree " + command_ + " --help')");
    }
    if (it->second.is_flag) {
      if (inline_value) throw Error("option '--" + name + "' takes no value");
      values_[name] = "1";
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argc)
        throw Error("option '--" + name + "' needs a value (" + it->second.metavar + ")");
      value = argv[++i];
    }
    values_[name] = value;
  }
  return true;
}

bool Args::given(const std::string& name) const {
  return values_.count(name) > 0;
}

bool Args::flag_set(const std::string& name) const {
  return given(name);
}

std::string Args::str(const std::string& name) const {
  auto v = values_.find(name);
  if (v != values_.end()) return v->second;
  return opts_.at(name).def;
}

int64_t Args::integer(const std::string& name) const {
  const auto s = str(name);
  try {
    size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error("option '--" + name + "' needs an integer, got '" + s + "'");
}

uint64_t Args::non_negative(const std::string& name) const {
  const int64_t v = integer(name);
  if (v < 0) throw Error("option '--" + name + "' must not be negative, got " + std::to_string(v));
  return uint64_t(v);
}

double Args::number(const std::string& name) const {
  const auto s = str(name);
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error("option '--" + name + "' needs a number, got '" + s + "'");
}

std::string Args::usage() const {
  std::ostringstream os;
  os << "Usage: adtree " << command_ << " [OPTIONS]\n\n" << summary_ << "\n\nOptions:\n";
  for (const auto& name : order_) {
    const auto& o = opts_.at(name);
    std::string left = "  --" + name + (o.is_flag ? "" : " " + o.metavar);
    os << left;
    if (left.size() < 28)
      os << std::string(28 - left.size(), ' ');
    else
      os << "\n" << std::string(28, ' ');
    os << o.help;
    if (!o.def.empty()) os << " (default: " << o.def << ")";
    os << "\n";
  }
  os << "  -h, --help                show this help\n";
  return os.str();
}

}  // namespace adtree::cli
