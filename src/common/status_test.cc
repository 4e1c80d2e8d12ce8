#include "common/status.h"

#include <gtest/gtest.h>

namespace gpunex {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd");
  return x / 2;
}

Status UseHalf(int x, int* out) {
  GPUNEX_ASSIGN_OR_RETURN(*out, Half(x));
  return Status::Ok();
}

TEST(Status, CarriesCodeMessageAndFields) {
  Status st = FieldError("gpus[0].quantity", "must be at least 1");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kValidationFailed);
  EXPECT_EQ(st.fields().at("gpus[0].quantity"), "must be at least 1");
  EXPECT_EQ(std::string(StatusCodeName(st.code())), "validation_failed");
}

TEST(StatusOr, PropagatesErrorsThroughMacros) {
  int v = 0;
  EXPECT_TRUE(UseHalf(4, &v).ok());
  EXPECT_EQ(v, 2);
  Status st = UseHalf(3, &v);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "odd");
}

}  // namespace
}  // namespace gpunex
