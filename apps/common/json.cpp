#include "apps/common/json.hpp"

#include <fmt/format.h>

#include <charconv>

namespace pollfab::apps {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  bool run(Json& out, std::string& err) {
    bool ok = value(out, 0) && (ws(), pos_ == s_.size() || fail("trailing characters"));
    if (!ok) err = fmt::format("offset {}: {}", pos_, why_);
    return ok;
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool fail(const char* why) {
    why_ = why;
    return false;
  }
  void ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool lit(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return fail("invalid literal");
    pos_ += w.size();
    return true;
  }

  bool value(Json& v, int depth) {
    if (depth > kMaxDepth) return fail("nested too deeply");
    ws();
    if (pos_ >= s_.size()) return fail("unexpected end");
    char c = s_[pos_];
    switch (c) {
      case 'n': v.kind = Json::Kind::Null; return lit("null");
      case 't': v.kind = Json::Kind::Bool; v.boolean = true; return lit("true");
      case 'f': v.kind = Json::Kind::Bool; v.boolean = false; return lit("false");
      case '"': v.kind = Json::Kind::String; return string(v.text);
      case '[': return array(v, depth);
      case '{': return object(v, depth);
      default: return number(v);
    }
  }

  bool number(Json& v) {
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    size_t digits = pos_;
    while (pos_ < s_.size() && ((s_[pos_] >= '0' && s_[pos_] <= '9') || s_[pos_] == '.' ||
                                s_[pos_] == 'e' || s_[pos_] == 'E' || s_[pos_] == '+' || s_[pos_] == '-'))
      ++pos_;
    if (pos_ == digits || s_[digits] < '0' || s_[digits] > '9') return fail("invalid value");
    v.kind = Json::Kind::Number;
    v.text = std::string(s_.substr(start, pos_ - start));
    return true;
  }

  static void utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  bool string(std::string& out) {
    ++pos_;  // opening quote
    for (;;) {
      if (pos_ >= s_.size()) return fail("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) return fail("unterminated string");
      char e = s_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = 0;
          if (pos_ + 4 > s_.size()) return fail("bad \\u escape");
          auto r = std::from_chars(s_.data() + pos_, s_.data() + pos_ + 4, cp, 16);
          if (r.ec != std::errc() || r.ptr != s_.data() + pos_ + 4) return fail("bad \\u escape");
          pos_ += 4;
          utf8(out, cp);
          break;
        }
        default: return fail("bad escape");
      }
    }
  }

  bool array(Json& v, int depth) {
    v.kind = Json::Kind::Array;
    ++pos_;
    ws();
    if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
    for (;;) {
      v.items.emplace_back();
      if (!value(v.items.back(), depth + 1)) return false;
      ws();
      if (pos_ >= s_.size()) return fail("unterminated array");
      char c = s_[pos_++];
      if (c == ']') return true;
      if (c != ',') return fail("expected ',' or ']'");
    }
  }

  bool object(Json& v, int depth) {
    v.kind = Json::Kind::Object;
    ++pos_;
    ws();
    if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
    for (;;) {
      ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') return fail("expected a member name");
      v.keys.emplace_back();
      if (!string(v.keys.back())) return false;
      ws();
      if (pos_ >= s_.size() || s_[pos_++] != ':') return fail("expected ':'");
      v.items.emplace_back();
      if (!value(v.items.back(), depth + 1)) return false;
      ws();
      if (pos_ >= s_.size()) return fail("unterminated object");
      char c = s_[pos_++];
      if (c == '}') return true;
      if (c != ',') return fail("expected ',' or '}'");
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  const char* why_ = "";
};

}  // namespace

const Json* Json::get(std::string_view key) const noexcept {
  if (kind != Kind::Object) return nullptr;
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key) return &items[i];
  return nullptr;
}

uint64_t Json::u64(uint64_t def) const noexcept {
  if (kind != Kind::Number) return def;
  uint64_t v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  return (r.ec == std::errc() && r.ptr == text.data() + text.size()) ? v : def;
}

bool parse_json(std::string_view text, Json& out, std::string& err) {
  out = Json{};
  return Parser(text).run(out, err);
}

}  // namespace pollfab::apps
