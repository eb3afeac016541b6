// The DLPack ABI (dmlc/dlpack, versions 0.8 and 1.0) as far as a consumer needs it: the structs a
// producer's __dlpack__() capsule points to. Declared here from the specification's layout (it is
// an ABI: the field order and types are what every framework agrees on); no header of it ships
// with Debian.
#pragma once

#include <cstdint>

namespace tutti::python::dlpack {

enum DeviceType : int32_t {
  kCpu = 1,
  kCuda = 2,
  kCudaHost = 3,  // page-locked host memory: host memory to us
  kRocm = 10,
  kRocmHost = 11,
  kCudaManaged = 13,
};

struct Device {
  int32_t device_type;  // DeviceType
  int32_t device_id;
};

enum TypeCode : uint8_t {
  kInt = 0,
  kUInt = 1,
  kFloat = 2,
  kOpaqueHandle = 3,
  kBfloat = 4,
  kComplex = 5,
  kBool = 6,
};

struct DataType {
  uint8_t code;  // TypeCode
  uint8_t bits;
  uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null: compact row-major
  uint64_t byte_offset;
};

// Version 0.x: capsule "dltensor", renamed "used_dltensor" by the consumer that takes it.
struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

// Version 1.x: capsule "dltensor_versioned", renamed "used_dltensor_versioned".
struct Version {
  uint32_t major;
  uint32_t minor;
};

struct ManagedTensorVersioned {
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  uint64_t flags;
  Tensor dl_tensor;
};

constexpr uint64_t kFlagReadOnly = uint64_t{1} << 0;

}  // namespace tutti::python::dlpack
