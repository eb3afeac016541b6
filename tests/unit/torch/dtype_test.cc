// torch dtype -> tutti DataType, and the refusals, without any rank.
#include <gtest/gtest.h>

#include "tutti/torch_ops.hpp"

namespace tx = tutti::torchx;
using tutti::DataType;

TEST(TorchDtype, EveryTypeBothHaveMapsToItsTwin) {
  const std::pair<c10::ScalarType, DataType> pairs[] = {
      {torch::kFloat32, DataType::kFloat32}, {torch::kFloat64, DataType::kFloat64},
      {torch::kFloat16, DataType::kFloat16}, {torch::kBFloat16, DataType::kBFloat16},
      {torch::kInt32, DataType::kInt32},     {torch::kInt64, DataType::kInt64},
      {torch::kInt16, DataType::kInt16},     {torch::kInt8, DataType::kInt8},
      {torch::kUInt8, DataType::kUInt8},     {torch::kBool, DataType::kBool}};
  for (auto [torch_type, tutti_type] : pairs) {
    EXPECT_EQ(tx::to_tutti(torch_type), tutti_type) << c10::toString(torch_type);
    EXPECT_EQ(tutti::element_size(tutti_type), c10::elementSize(torch_type));
  }
}

TEST(TorchDtype, OthersAreRefusedNamingTheTensor) {
  for (c10::ScalarType t : {torch::kComplexFloat, torch::kComplexDouble, torch::kComplexHalf,
                            torch::kQInt8, torch::kQUInt8, torch::kQInt32}) {
    try {
      tx::to_tutti(t, "tensor 'fc.weight'");
      ADD_FAILURE() << c10::toString(t) << " was accepted";
    } catch (const tutti::Error& e) {
      EXPECT_EQ(e.code(), tutti::ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("tensor 'fc.weight' has dtype"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(c10::toString(t)), std::string::npos) << e.what();
    }
  }
}

TEST(TorchDtype, CheckTensorRefusesUndefinedAndSparse) {
  EXPECT_THROW(tx::check_tensor(torch::Tensor(), "t"), tutti::Error);
  EXPECT_THROW(tx::check_tensor(torch::eye(3).to_sparse(), "t"), tutti::Error);
  EXPECT_NO_THROW(tx::check_tensor(torch::zeros({2, 3}).t(), "t"));
}
