// A small JSON reader for the pollfab command (the stats socket's documents): a DOM of
// null/bool/number/string/array/object values. Numbers keep their text, so 64-bit counters
// are read exactly (u64()). Object members keep their order. Not a validator for every corner
// of RFC 8259 (e.g. \u escapes outside the BMP are kept as two 3-byte sequences).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pollfab::apps {

struct Json {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  std::string text;                // Number: its literal; String: the decoded value
  std::vector<Json> items;         // Array elements, or Object member values
  std::vector<std::string> keys;   // Object member names (keys[i] names items[i])

  // The member named key of an object, else nullptr.
  const Json* get(std::string_view key) const noexcept;
  // A non-negative integer number's value, else def.
  uint64_t u64(uint64_t def = 0) const noexcept;
  bool is_null() const noexcept { return kind == Kind::Null; }
};

// Parses one JSON value (surrounding whitespace allowed). On failure returns false and sets err
// ("offset N: what").
bool parse_json(std::string_view text, Json& out, std::string& err);

}  // namespace pollfab::apps
