#include "buffer_view.hpp"

#include <array>
#include <string>

#include "dlpack.hpp"
#include "tutti/error.hpp"

namespace tutti::python {
namespace {

constexpr std::string_view kSupported =
    "float32, float64, float16, bfloat16, int32, int64, uint8, int8, int16, bool";

[[noreturn]] void refuse(std::string_view what, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": " + why);
}

// The Python error now set, as text (and cleared): for messages that wrap it.
std::string take_python_error() {
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  std::string text = "unknown error";
  if (value != nullptr) {
    if (PyObject* s = PyObject_Str(value)) {
      if (const char* c = PyUnicode_AsUTF8(s)) text = c;
      Py_DECREF(s);
    }
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  PyErr_Clear();
  return text;
}

// Whether `object` says, through __dlpack_device__, that its memory is CUDA device (or managed)
// memory. Objects without the method, or whose answer is not a (type, id) pair, are not.
bool on_cuda(PyObject* object) {
  if (!PyObject_HasAttrString(object, "__dlpack_device__")) return false;
  PyObject* device = PyObject_CallMethod(object, "__dlpack_device__", nullptr);
  if (device == nullptr) {
    PyErr_Clear();
    return false;
  }
  long type = -1;
  if (PyTuple_Check(device) && PyTuple_Size(device) >= 1)
    type = PyLong_AsLong(PyTuple_GetItem(device, 0));
  if (PyErr_Occurred()) PyErr_Clear();
  Py_DECREF(device);
  return type == dlpack::kCuda || type == dlpack::kCudaManaged;
}

bool type_of_dlpack(const dlpack::DataType& t, DataType& type) {
  if (t.lanes != 1) return false;
  switch (t.code) {
    case dlpack::kFloat:
      if (t.bits == 32)
        type = DataType::kFloat32;
      else if (t.bits == 64)
        type = DataType::kFloat64;
      else if (t.bits == 16)
        type = DataType::kFloat16;
      else
        return false;
      return true;
    case dlpack::kBfloat:
      if (t.bits != 16) return false;
      type = DataType::kBFloat16;
      return true;
    case dlpack::kInt:
      if (t.bits == 32)
        type = DataType::kInt32;
      else if (t.bits == 64)
        type = DataType::kInt64;
      else if (t.bits == 8)
        type = DataType::kInt8;
      else if (t.bits == 16)
        type = DataType::kInt16;
      else
        return false;
      return true;
    case dlpack::kUInt:
      if (t.bits != 8) return false;
      type = DataType::kUInt8;
      return true;
    case dlpack::kBool:
      if (t.bits != 8) return false;
      type = DataType::kBool;
      return true;
    default:
      return false;
  }
}

std::string dlpack_type_name(const dlpack::DataType& t) {
  static constexpr std::array<const char*, 7> kCodes = {"int",    "uint",    "float", "handle",
                                                        "bfloat", "complex", "bool"};
  const char* code = t.code < kCodes.size() ? kCodes[t.code] : "code?";
  std::string name = code + std::to_string(t.bits);
  return t.lanes == 1 ? name : name + "x" + std::to_string(t.lanes);
}

}  // namespace

bool type_of_format(std::string_view format, size_t itemsize, DataType& type) {
  // Native or explicitly little-endian only (this is a little-endian machine's runtime).
  if (!format.empty() && (format[0] == '@' || format[0] == '=' || format[0] == '<'))
    format.remove_prefix(1);
  if (format.size() != 1) return false;
  switch (format[0]) {
    case 'f':
      type = DataType::kFloat32;
      return itemsize == 4;
    case 'd':
      type = DataType::kFloat64;
      return itemsize == 8;
    case 'e':
      type = DataType::kFloat16;
      return itemsize == 2;
    case 'b':
      type = DataType::kInt8;
      return itemsize == 1;
    case 'B':
      type = DataType::kUInt8;
      return itemsize == 1;
    case 'h':
      type = DataType::kInt16;
      return itemsize == 2;
    case '?':
      type = DataType::kBool;
      return itemsize == 1;
    case 'i':
    case 'l':
    case 'q':
      if (itemsize == 4)
        type = DataType::kInt32;
      else if (itemsize == 8)
        type = DataType::kInt64;
      else
        return false;
      return true;
    default:
      return false;
  }
}

BufferView::BufferView(PyObject* object, Access access, std::string_view what) {
  try {
    take(object, access, what);
  } catch (...) {
    release();  // what was taken before the refusal
    throw;
  }
}

void BufferView::take(PyObject* object, Access access, std::string_view what) {
  // tutti/__init__.py's _Bits: bfloat16 memory held as a uint16 numpy array (numpy has no
  // bfloat16, and neither its buffer protocol nor its DLPack export can name ml_dtypes' one).
  if (PyObject_HasAttrString(object, "_tutti_bfloat16")) {
    PyObject* array = PyObject_GetAttrString(object, "_tutti_bfloat16");
    if (array == nullptr) refuse(what, take_python_error());
    const int flags =
        PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (access == Access::kWrite ? PyBUF_WRITABLE : 0);
    const int status = PyObject_GetBuffer(array, &buffer_, flags);
    Py_DECREF(array);  // the buffer holds its own reference
    if (status != 0) refuse(what, take_python_error());
    has_buffer_ = true;
    if (buffer_.itemsize != 2) refuse(what, "bfloat16 bits must be 2 bytes each");
    type_ = DataType::kBFloat16;
    data_ = buffer_.buf;
    count_ = static_cast<size_t>(buffer_.len / 2);
    for (int d = 0; d < buffer_.ndim; ++d) shape_.push_back(buffer_.shape[d]);
    writable_ = buffer_.readonly == 0;
    return;
  }
  // The buffer protocol first where the object has both (numpy): it says whether the memory is
  // writable, which DLPack before 1.0 cannot.
  if (PyObject_CheckBuffer(object)) {
    // An object that speaks both but cannot export this memory as a buffer (a JAX bfloat16 array:
    // the buffer protocol has no such type) goes through DLPack instead.
    if (!PyObject_HasAttrString(object, "__dlpack__")) {
      from_buffer(object, access, what);
      return;
    }
    Py_buffer probe{};
    if (PyObject_GetBuffer(object, &probe, PyBUF_STRIDES | PyBUF_FORMAT) == 0) {
      PyBuffer_Release(&probe);
      from_buffer(object, access, what);
      return;
    }
    PyErr_Clear();
    from_dlpack(object, access, what);
    return;
  }
  if (PyObject_HasAttrString(object, "__dlpack__")) {
    from_dlpack(object, access, what);
    return;
  }
  if (PyCapsule_CheckExact(object))
    refuse(what,
           "is a DLPack capsule (tf.experimental.dlpack.to_dlpack, torch.utils.dlpack.to_dlpack): "
           "a capsule can be read once and says nothing of its owner, so tutti takes the array "
           "itself (TensorFlow tensors, torch tensors, JAX and CuPy arrays have __dlpack__), or "
           "the framework's from_dlpack(capsule)");
  refuse(what, std::string("a ") + Py_TYPE(object)->tp_name +
                   " is neither a buffer (numpy array, memoryview) nor has __dlpack__ (JAX, CuPy, "
                   "TensorFlow, torch)" +
                   (PyObject_HasAttrString(object, "value")
                        ? "; for a variable pass its value (TensorFlow: "
                          "v.assign(tutti.allreduce(v.value())))"
                        : ""));
}

void BufferView::from_buffer(PyObject* object, Access access, std::string_view what) {
  const int flags =
      PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (access == Access::kWrite ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(object, &buffer_, flags) != 0) {
    const std::string why = take_python_error();
    // Ask again without the demands to say which one failed.
    Py_buffer plain{};
    if (PyObject_GetBuffer(object, &plain, PyBUF_STRIDES | PyBUF_FORMAT) == 0) {
      const bool read_only = plain.readonly != 0;
      PyBuffer_Release(&plain);
      if (access == Access::kWrite && read_only)
        refuse(what,
               "is read-only; pass a writable array (numpy: x.copy(), or "
               "x.setflags(write=True) where allowed) or let tutti return a new one");
      refuse(what,
             "is not contiguous row-major memory (a slice with steps, a transposed "
             "array); pass numpy.ascontiguousarray(x)");
    }
    PyErr_Clear();
    refuse(what, why);
  }
  has_buffer_ = true;
  const std::string_view format = buffer_.format ? buffer_.format : "B";
  if (!type_of_format(format, static_cast<size_t>(buffer_.itemsize), type_))
    refuse(what, "element type '" + std::string(format) + "' (" + std::to_string(buffer_.itemsize) +
                     " bytes) is not one tutti reduces; it takes " + std::string(kSupported));
  data_ = buffer_.buf;
  count_ = static_cast<size_t>(buffer_.len / buffer_.itemsize);
  for (int d = 0; d < buffer_.ndim; ++d) shape_.push_back(buffer_.shape[d]);
  writable_ = buffer_.readonly == 0;
}

void BufferView::from_dlpack(PyObject* object, Access access, std::string_view what) {
  // DLPack 1.0 first (it carries a read-only flag); producers that do not know max_version raise
  // TypeError, and get the 0.x call.
  //
  // CUDA memory: the producer is asked to make its pending writes visible to the legacy default
  // stream (DLPack's stream 1), the stream tutti's device calls order after by default. Without a
  // stream the producer syncs nothing (torch), and a tensor still being written on torch's side
  // stream would be read early.
  PyObject* method = PyObject_GetAttrString(object, "__dlpack__");
  if (method == nullptr) refuse(what, take_python_error());
  PyObject* no_args = PyTuple_New(0);
  PyObject* kwargs = on_cuda(object)
                         ? Py_BuildValue("{s:(ii),s:i}", "max_version", 1, 0, "stream", 1)
                         : Py_BuildValue("{s:(ii)}", "max_version", 1, 0);
  capsule_ = PyObject_Call(method, no_args, kwargs);
  Py_XDECREF(kwargs);
  if (capsule_ == nullptr && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Clear();
    PyObject* stream = on_cuda(object) ? Py_BuildValue("{s:i}", "stream", 1) : nullptr;
    capsule_ = PyObject_Call(method, no_args, stream);
    Py_XDECREF(stream);
  }
  Py_DECREF(no_args);
  Py_DECREF(method);
  if (capsule_ == nullptr) refuse(what, "__dlpack__() failed: " + take_python_error());
  const dlpack::Tensor* tensor = nullptr;
  uint64_t flags = 0;
  if (PyCapsule_IsValid(capsule_, "dltensor_versioned")) {
    auto* m = static_cast<dlpack::ManagedTensorVersioned*>(
        PyCapsule_GetPointer(capsule_, "dltensor_versioned"));
    if (m->version.major != 1)
      refuse(what, "DLPack " + std::to_string(m->version.major) + "." +
                       std::to_string(m->version.minor) +
                       " is not one tutti reads (it reads 0.x and 1.x)");
    managed_ = m;
    versioned_ = true;
    tensor = &m->dl_tensor;
    flags = m->flags;
    PyCapsule_SetName(capsule_, "used_dltensor_versioned");
  } else if (PyCapsule_IsValid(capsule_, "dltensor")) {
    auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule_, "dltensor"));
    managed_ = m;
    tensor = &m->dl_tensor;
    PyCapsule_SetName(capsule_, "used_dltensor");
  } else {
    refuse(what, "__dlpack__() returned no DLPack capsule");
  }
  const dlpack::Tensor& t = *tensor;
  switch (t.device.device_type) {
    case dlpack::kCpu:
    case dlpack::kCudaHost:
    case dlpack::kRocmHost:
      break;
    case dlpack::kCuda:
    case dlpack::kCudaManaged:
      on_device_ = true;
      break;
    default:
      refuse(what, "is on DLPack device type " + std::to_string(t.device.device_type) +
                       ", which tutti cannot reach (host and CUDA memory only)");
  }
  if (!type_of_dlpack(t.dtype, type_))
    refuse(what, "element type " + dlpack_type_name(t.dtype) +
                     " is not one tutti reduces; it takes " + std::string(kSupported));
  writable_ = (flags & dlpack::kFlagReadOnly) == 0;
  if (access == Access::kWrite && !writable_)
    refuse(what, "is read-only (its DLPack export says so); let tutti return a new array");
  // Compact row-major: strides absent, or equal to the row-major ones (dimensions of extent 1
  // may have any stride).
  int64_t expected = 1;
  size_t count = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    const int64_t extent = t.shape[d];
    if (t.strides != nullptr && extent != 1 && t.strides[d] != expected)
      refuse(what, "is not contiguous row-major memory; make a contiguous copy first");
    expected *= extent;
    count *= static_cast<size_t>(extent);
  }
  for (int d = 0; d < t.ndim; ++d) shape_.push_back(t.shape[d]);
  count_ = count;
  data_ = static_cast<std::byte*>(t.data) + t.byte_offset;
}

BufferView::~BufferView() {
  release();
}

void BufferView::release() {
  if (has_buffer_) PyBuffer_Release(&buffer_);
  has_buffer_ = false;
  if (managed_ != nullptr) {
    // The capsule is renamed "used_...": its destructor leaves the tensor to us.
    if (versioned_) {
      auto* m = static_cast<dlpack::ManagedTensorVersioned*>(managed_);
      if (m->deleter != nullptr) m->deleter(m);
    } else {
      auto* m = static_cast<dlpack::ManagedTensor*>(managed_);
      if (m->deleter != nullptr) m->deleter(m);
    }
    managed_ = nullptr;
  }
  Py_XDECREF(capsule_);
  capsule_ = nullptr;
}

}  // namespace tutti::python
