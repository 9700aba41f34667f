#include "cli/flags.h"

#include <charconv>
#include <iostream>
#include <sstream>

namespace tunejit::cli {

FlagParser::FlagParser(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

void FlagParser::String(const std::string& name, std::string* out, const std::string& metavar,
                        const std::string& help) {
  flags_.push_back({name, metavar, help, [out](const std::string& v) {
                      *out = v;
                      return true;
                    }});
}

void FlagParser::Int(const std::string& name, int64_t* out, const std::string& metavar,
                     const std::string& help) {
  flags_.push_back({name, metavar, help, [out](const std::string& v) {
                      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
                      return ec == std::errc() && end == v.data() + v.size();
                    }});
}

void FlagParser::Bool(const std::string& name, bool* out, const std::string& help) {
  Flag flag{name, "", help, [out](const std::string&) {
              *out = true;
              return true;
            }};
  flag.is_bool = true;
  flags_.push_back(std::move(flag));
}

void FlagParser::Positional(const std::string& metavar, const std::string& help, int min_count) {
  positional_metavar_ = metavar;
  positional_help_ = help;
  positional_min_ = min_count;
}

void FlagParser::HideFromHelp(const std::string& name) {
  for (Flag& f : flags_) {
    if (f.name == name) f.hidden = true;
  }
}

std::string FlagParser::Help() const {
  std::ostringstream out;
  out << "usage: " << command_ << " [flags]";
  if (!positional_metavar_.empty()) out << " " << positional_metavar_;
  out << "\n\n" << summary_ << "\n";
  if (!positional_metavar_.empty())
    out << "\n  " << positional_metavar_ << "  " << positional_help_ << "\n";
  out << "\nflags:\n";
  for (const Flag& f : flags_) {
    if (f.hidden) continue;
    std::string left = "--" + f.name + (f.is_bool ? "" : " " + f.metavar);
    out << "  " << left << std::string(left.size() < 26 ? 26 - left.size() : 1, ' ') << f.help
        << "\n";
  }
  out << "  --help                    show this help\n";
  return out.str();
}

int FlagParser::Parse(const std::vector<std::string>& args, std::vector<std::string>* positional) {
  auto usage_error = [&](const std::string& message) {
    std::cerr << command_ << ": " << message << "\n(run '" << command_ << " --help' for usage)\n";
    return kExitUsage;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << Help();
      return kExitOk;
    }
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      positional->push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const Flag* flag = nullptr;
    for (const Flag& f : flags_) {
      if (f.name == name) flag = &f;
    }
    if (flag == nullptr) return usage_error("unknown flag --" + name);
    if (!flag->is_bool && !has_value) {
      if (i + 1 >= args.size())
        return usage_error("--" + name + " needs a value (" + flag->metavar + ")");
      value = args[++i];
    }
    if (flag->is_bool && has_value) return usage_error("--" + name + " takes no value");
    if (!flag->set(value)) return usage_error("bad value for --" + name + ": '" + value + "'");
  }
  if (static_cast<int>(positional->size()) < positional_min_) {
    return usage_error("missing " + positional_metavar_);
  }
  return -1;
}

}  // namespace tunejit::cli
