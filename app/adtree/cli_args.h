// A small GNU-style option parser shared by every verb: --name VALUE, --name=VALUE, boolean
// --flag, -h/--help. Each verb declares its options (with help text and defaults) and reads them.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace adtree::cli {

// The non-empty items of a `sep`-separated option value ("ar,adt", "a red cat;rocket").
std::vector<std::string> split_list(const std::string& s, char sep = ',');

class Args {
 public:
  Args(std::string command, std::string summary);

  Args& option(const std::string& name, const std::string& metavar, const std::string& help,
               const std::string& default_value = "");
  Args& flag(const std::string& name, const std::string& help);

  // Returns false when --help was given (usage already printed to stdout). Throws adtree::Error on
  // unknown options, missing values and stray arguments.
  bool parse(int argc, char** argv);

  bool given(const std::string& name) const;  // set on the command line
  bool flag_set(const std::string& name) const;
  std::string str(const std::string& name) const;  // value or default
  int64_t integer(const std::string& name) const;  // throws on non-numbers
  // An integer >= 0 (seeds, counts): a negative one is an error, not a wrapped-around 2^64 - n.
  uint64_t non_negative(const std::string& name) const;
  double number(const std::string& name) const;
  std::string usage() const;

 private:
  void declare(const std::string& name);
  struct Opt {
    std::string metavar, help, def;
    bool is_flag = false;
  };
  std::string command_, summary_;
  std::vector<std::string> order_;
  std::map<std::string, Opt> opts_;
  std::map<std::string, std::string> values_;
};

}  // namespace adtree::cli
