// BufferView: a Python object's memory as tutti's calls take it (address, element count, type),
// from the buffer protocol (numpy arrays, memoryview, bytearray, array.array) or from DLPack
// (__dlpack__: JAX, CuPy, TensorFlow, torch tensors). The object's memory stays valid for as long
// as the view lives; views are made and destroyed with the GIL held, and only their addresses
// cross into the GIL-free part of a call.
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/types.hpp"

namespace tutti::python {

class BufferView {
 public:
  enum class Access { kRead, kWrite };

  // `what` names the buffer in errors ("allreduce's input"). Error(kInvalidArgument) for an object
  // that is neither a buffer nor DLPack-capable, memory that is not contiguous row-major, a type
  // tutti does not reduce, read-only memory asked for writing, or memory on a device tutti cannot
  // reach.
  BufferView(PyObject* object, Access access, std::string_view what);
  ~BufferView();
  BufferView(const BufferView&) = delete;
  BufferView& operator=(const BufferView&) = delete;

  void* data() const { return data_; }
  size_t count() const { return count_; }
  size_t bytes() const { return count_ * element_size(type_); }
  DataType type() const { return type_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  // CUDA (or ROCm) device memory; host memory otherwise.
  bool on_device() const { return on_device_; }
  bool writable() const { return writable_; }

 private:
  void take(PyObject* object, Access access, std::string_view what);
  void release();
  void from_buffer(PyObject* object, Access access, std::string_view what);
  void from_dlpack(PyObject* object, Access access, std::string_view what);

  void* data_ = nullptr;
  size_t count_ = 0;
  DataType type_ = DataType::kFloat32;
  std::vector<int64_t> shape_;
  bool on_device_ = false;
  bool writable_ = false;
  // What keeps the memory alive: a Py_buffer, or a DLPack capsule's managed tensor.
  bool has_buffer_ = false;
  Py_buffer buffer_{};
  PyObject* capsule_ = nullptr;  // owned reference
  void* managed_ = nullptr;      // the capsule's ManagedTensor(Versioned)
  bool versioned_ = false;
};

// The tutti type of a Python buffer format ("f", "<i8", "?", ...) with that item size, or false.
bool type_of_format(std::string_view format, size_t itemsize, DataType& type);

}  // namespace tutti::python
