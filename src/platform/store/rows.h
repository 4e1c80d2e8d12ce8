// Typed rows: a RowMapper<T> declares, once per record type, which column fills which
// field of T. From that one declaration a store gets both the select list of its
// queries and the decoder of their results, so no store writes a column list twice or
// counts positions.
//
//   const store::RowMapper<Run>& RunRows() {
//     static const auto* const m = new store::RowMapper<Run>({
//         {"id", &Run::id},
//         {"cutoff", &Run::cutoff},                        // Timestamp: Unix micros
//         {"method", [](Run& r, const store::Cell& c) { r.method = MethodFromText(c.Str()); }},
//         {"schedule", &Run::schedule, "r.schedule"},      // selected as `r.schedule AS schedule`
//     });
//     return *m;
//   }
//   tx.Query("SELECT " + RunRows().Select() + " FROM payout_runs WHERE ...") ...
//   GPUNEX_ASSIGN_OR_RETURN(std::vector<Run> runs, RunRows().Decode(rows));
//
// A field's conversion follows its type: std::string, bool, any integer, double,
// Timestamp (Unix microseconds), Usdc (integer micro-USDC), and std::optional of those
// (NULL is std::nullopt). Anything else (JSON text, enums as text, a nested struct) takes
// a conversion function. Decoding binds every declared column to its position in the
// result once, by name, then fills every row, converting its columns in declaration order
// (a conversion may read a field an earlier column set); a declared column missing from
// the result, or present twice, is a bug in the query and fails with kInternal naming it.
// Columns of the result that the mapper does not declare are ignored.
//
// Thread-safety: a RowMapper is immutable once built and may be shared by all threads.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/money.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"

namespace gpunex::platform::store {

namespace internal {

template <typename F>
struct IsOptional : std::false_type {};
template <typename F>
struct IsOptional<std::optional<F>> : std::true_type {};

// Converts a non-NULL cell to a field of type F (the conversions listed above).
template <typename F>
F FromCell(const Cell& c) {
  if constexpr (std::is_same_v<F, std::string>) {
    return c.Str();
  } else if constexpr (std::is_same_v<F, bool>) {
    return c.Bool();
  } else if constexpr (std::is_integral_v<F>) {
    return static_cast<F>(c.Int());
  } else if constexpr (std::is_floating_point_v<F>) {
    return static_cast<F>(c.Real());
  } else if constexpr (std::is_same_v<F, Timestamp>) {
    return c.Time();
  } else if constexpr (std::is_same_v<F, Usdc>) {
    return Usdc::Micros(c.Int());
  } else {
    static_assert(sizeof(F) == 0, "no conversion for this field's type: give a function");
  }
}

template <typename F>
void Assign(F& field, const Cell& c) {
  if constexpr (IsOptional<F>::value) {
    if (c.IsNull()) {
      field.reset();
    } else {
      field = FromCell<typename F::value_type>(c);
    }
  } else {
    field = FromCell<F>(c);
  }
}

// For each of `wanted`, its position in `names`. Fails with kInternal naming a column
// that `names` lacks or holds twice.
StatusOr<std::vector<size_t>> BindColumns(const ColumnNames& names,
                                          const std::vector<std::string>& wanted);

// Internal("decoding column C: what").
Status DecodeError(std::string_view column, const std::exception& e);

}  // namespace internal

// An override of a column's expression for one query (RowMapper::Select).
struct SelectAs {
  std::string_view name;
  std::string_view expr;
};

template <typename T>
class RowMapper {
 public:
  // Fills one field of T from its cell. May throw what Cell's accessors throw.
  using Convert = std::function<void(T&, const Cell&)>;

  struct Column {
    // A column stored in `field`, converted by the field's type.
    template <typename F>
    Column(std::string name_in, F T::*field, std::string expr_in = "")
        : name(std::move(name_in)),
          expr(std::move(expr_in)),
          convert([field](T& t, const Cell& c) { internal::Assign(t.*field, c); }) {}
    // A column converted by `fn`.
    Column(std::string name_in, Convert fn, std::string expr_in = "")
        : name(std::move(name_in)), expr(std::move(expr_in)), convert(std::move(fn)) {}

    std::string name;  // the name in the result
    std::string expr;  // what to select under that name; empty: the column itself
    Convert convert;
  };

  explicit RowMapper(std::vector<Column> columns) : columns_(std::move(columns)) {
    for (const Column& c : columns_) names_.push_back(c.name);
  }

  // The same columns and `more`: a record read with a few extra columns in some queries.
  RowMapper With(std::vector<Column> more) const {
    std::vector<Column> all = columns_;
    for (Column& c : more) all.push_back(std::move(c));
    return RowMapper(std::move(all));
  }

  // The select list, in declaration order: "id, name", or with `alias` "r.id, r.name".
  // A column declared with an expression, or named in `as`, is selected as
  // "expr AS name" (not prefixed).
  std::string Select(std::string_view alias = "", std::initializer_list<SelectAs> as = {}) const {
    std::string out;
    for (const Column& c : columns_) {
      if (!out.empty()) out += ", ";
      std::string_view expr = c.expr;
      for (const SelectAs& a : as) {
        if (a.name == c.name) expr = a.expr;
      }
      if (!expr.empty()) {
        out += std::string(expr) + " AS " + c.name;
      } else {
        if (!alias.empty()) out += std::string(alias) + ".";
        out += c.name;
      }
    }
    return out;
  }

  // The bare names, "id, name": the column list of an INSERT.
  std::string Names() const {
    std::string out;
    for (const std::string& n : names_) out += (out.empty() ? "" : ", ") + n;
    return out;
  }

  // One record per row, in order. Fails with kInternal when a declared column is missing
  // from the result (or there twice), or a cell cannot be converted (naming the column).
  StatusOr<std::vector<T>> Decode(const std::vector<Row>& rows) const {
    std::vector<T> out;
    out.reserve(rows.size());
    GPUNEX_RETURN_IF_ERROR(
        Each(rows, "", [&](std::optional<T> t) { out.push_back(*std::move(t)); }));
    return out;
  }

  // For the right side of a LEFT JOIN: one entry per row, none where the declared column
  // `present` is NULL (no record joined), the record otherwise.
  StatusOr<std::vector<std::optional<T>>> DecodeOptional(const std::vector<Row>& rows,
                                                         std::string_view present) const {
    std::vector<std::optional<T>> out;
    out.reserve(rows.size());
    GPUNEX_RETURN_IF_ERROR(
        Each(rows, present, [&](std::optional<T> t) { out.push_back(std::move(t)); }));
    return out;
  }

  // The first row's record, or none for an empty result.
  StatusOr<std::optional<T>> First(const std::vector<Row>& rows) const {
    if (rows.empty()) return std::optional<T>();
    GPUNEX_ASSIGN_OR_RETURN(std::vector<T> one, Decode(std::vector<Row>{rows.front()}));
    return std::optional<T>(std::move(one.front()));
  }

  // A page of rows (QueryPage) as a page of records.
  StatusOr<Page<T>> DecodePage(const Page<Row>& page) const {
    Page<T> out;
    GPUNEX_ASSIGN_OR_RETURN(out.items, Decode(page.items));
    out.next = page.next;
    return out;
  }

 private:
  // Calls `fn` with each row's record, or with none where `present` is given and its cell
  // is NULL.
  template <typename Fn>
  Status Each(const std::vector<Row>& rows, std::string_view present, Fn fn) const {
    const ColumnNames* bound = nullptr;
    std::vector<size_t> index;
    size_t present_at = 0;
    for (const Row& row : rows) {
      // The rows of one result share their names: bound once. (Rows gathered from
      // several queries are bound again where the list changes.)
      if (&row.names() != bound) {
        GPUNEX_ASSIGN_OR_RETURN(index, internal::BindColumns(row.names(), names_));
        if (!present.empty()) {
          GPUNEX_ASSIGN_OR_RETURN(std::vector<size_t> p,
                                  internal::BindColumns(row.names(), {std::string(present)}));
          present_at = p[0];
        }
        bound = &row.names();
      }
      if (!present.empty() && row.At(present_at).IsNull()) {
        fn(std::nullopt);
        continue;
      }
      T t{};
      for (size_t i = 0; i < columns_.size(); ++i) {
        try {
          columns_[i].convert(t, row.At(index[i]));
        } catch (const std::exception& e) {
          return internal::DecodeError(columns_[i].name, e);
        }
      }
      fn(std::optional<T>(std::move(t)));
    }
    return Status::Ok();
  }

  std::vector<Column> columns_;
  std::vector<std::string> names_;
};

}  // namespace gpunex::platform::store
