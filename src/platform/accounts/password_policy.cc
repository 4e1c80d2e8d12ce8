#include "platform/accounts/password_policy.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_set>
#include <vector>

#include "common/ascii.h"

namespace gpunex::platform::accounts {
namespace internal {
std::string_view CommonPasswordsText();  // internal/common_passwords.cc.in
}  // namespace internal

namespace {

bool IsAsciiAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

const std::unordered_set<std::string>& CommonPasswords() {
  static const auto* const list = [] {
    auto* set = new std::unordered_set<std::string>();
    const std::string_view text = internal::CommonPasswordsText();
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string_view::npos) end = text.size();
      const std::string_view line = text.substr(pos, end - pos);
      if (!line.empty() && line.front() != '#') set->insert(AsciiLower(line));
      pos = end + 1;
    }
    return set;
  }();
  return *list;
}

// The pieces of `text` between characters other than ASCII letters and digits, and all of
// its letters and digits together, each of 3 characters or more, in lower case.
void AddTokens(std::string_view text, std::vector<std::string>* out) {
  std::string piece, joined;
  const auto flush = [&] {
    if (piece.size() >= 3) out->push_back(piece);
    piece.clear();
  };
  for (const char c : AsciiLower(text)) {
    if (IsAsciiAlnum(c)) {
      piece += c;
      joined += c;
    } else {
      flush();
    }
  }
  flush();
  if (joined.size() >= 3) out->push_back(joined);
}

// Letters and digits left in `lower` once every token is taken out, longest first.
size_t CharactersBesides(std::string lower, std::vector<std::string> tokens) {
  std::sort(tokens.begin(), tokens.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const std::string& t : tokens) {
    for (size_t at = lower.find(t); at != std::string::npos; at = lower.find(t, at)) {
      lower.erase(at, t.size());
    }
  }
  return static_cast<size_t>(std::count_if(lower.begin(), lower.end(), IsAsciiAlnum));
}

}  // namespace

bool IsCommonPassword(std::string_view password) {
  return CommonPasswords().count(AsciiLower(password)) > 0;
}

size_t CommonPasswordCount() { return CommonPasswords().size(); }

std::string CheckPasswordStrength(std::string_view password, std::string_view email,
                                  std::string_view name) {
  if (password.size() < kMinPasswordLength) {
    return "must be at least " + std::to_string(kMinPasswordLength) + " characters";
  }
  const std::string lower = AsciiLower(password);
  // The password without the digits and symbols before and after its letters.
  const size_t first = lower.find_first_of("abcdefghijklmnopqrstuvwxyz");
  const size_t last = lower.find_last_of("abcdefghijklmnopqrstuvwxyz");
  const std::string core = first == std::string::npos ? "" : lower.substr(first, last - first + 1);
  if (IsCommonPassword(lower) || (core.size() >= 4 && IsCommonPassword(core))) {
    return "is one of the most common passwords; choose one that others are unlikely to use";
  }
  if (std::set<char>(lower.begin(), lower.end()).size() < kMinDistinctCharacters) {
    return "uses too few different characters";
  }
  std::vector<std::string> tokens;
  const size_t at = email.rfind('@');
  AddTokens(email.substr(0, at), &tokens);
  if (at != std::string_view::npos) {
    std::string_view domain = email.substr(at + 1);
    // Every label but the last (the top-level domain, which is too short to matter).
    if (const size_t dot = domain.rfind('.'); dot != std::string_view::npos) {
      domain = domain.substr(0, dot);
    }
    AddTokens(domain, &tokens);
  }
  AddTokens(name, &tokens);
  if (CharactersBesides(lower, tokens) < kMinCharactersBesidesIdentity) {
    return "must not be based on your email address or name";
  }
  return "";
}

}  // namespace gpunex::platform::accounts
