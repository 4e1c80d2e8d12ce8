// List paging (docs/api.md: ?limit=&cursor=, {"items": [...], "next_cursor": "..." | null}).
//
// Every list is keyset-paged: items are ordered by a sort key (one or more columns, the
// last one unique, e.g. (submitted_at, id)), and a page after another starts after the
// key of the last item it showed. A Cursor holds that key; its text form is opaque to
// clients (base64url of the key's JSON), the same codec for every list. A page that
// reached the end has no next cursor (null on the wire).
//
// The API decodes `limit` and `cursor` into a PageRequest (api/api.h ParsePageRequest);
// domain code passes it on to its store, whose keyset helper (store/paging.h) checks
// that the cursor's key has the shape of the list's sort key.
//
// Thread-safety: value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"

namespace gpunex {

// The sort key of the last item of a page.
class Cursor {
 public:
  using Part = std::variant<int64_t, std::string>;

  explicit Cursor(std::vector<Part> parts) : parts_(std::move(parts)) {}
  const std::vector<Part>& parts() const { return parts_; }

  // The opaque text form.
  std::string Encode() const;
  // Fails with a field error on "cursor" when `text` was not made by Encode (or is longer
  // than kMaxTextLength).
  static StatusOr<Cursor> Decode(std::string_view text);

  static constexpr size_t kMaxTextLength = 512;
  static constexpr size_t kMaxParts = 4;

  friend bool operator==(const Cursor&, const Cursor&) = default;

 private:
  std::vector<Part> parts_;
};

// What a list request asks for.
struct PageRequest {
  int limit = 50;
  std::optional<Cursor> after;  // none: the first page
};

// How many items a list gives by default, and at most (each list sets its maximum).
struct PageLimits {
  int default_limit = 50;
  int max_limit = 200;
};

// One page of a list.
template <typename T>
struct Page {
  std::vector<T> items;
  std::optional<Cursor> next;  // none: this page reached the end
};

}  // namespace gpunex
