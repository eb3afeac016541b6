// A library loaded at run time (dlopen) instead of linked, for the dependencies a job may never
// need: libcurl for an etcd store, NCCL for device collectives. It is opened by the first of its
// candidate names that loads, and its entry points are bound by name into a table of function
// pointers; the caller words the errors, since only it knows what to install.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace tutti {

class SharedLibrary {
 public:
  // kGlobal lets libraries loaded later bind to this one's symbols (torch's libraries then use
  // the NCCL tutti loaded instead of loading a second); kLocal keeps them to this handle.
  enum class Scope { kLocal, kGlobal };

  // Tries `names` in order (dlopen with RTLD_NOW); loaded() says whether one loaded.
  SharedLibrary(std::span<const char* const> names, Scope scope);
  // The symbols the process already has (RTLD_DEFAULT: the program's and those of every library
  // loaded with global scope), named `description` in messages. Never closed.
  static SharedLibrary process(std::string_view description);

  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  // Closes the library unless keep_loaded() was called: a library refused (a symbol missing, its
  // initialisation failed) is not left in the process.
  ~SharedLibrary();

  bool loaded() const { return loaded_; }
  // The name it loaded by (process()'s description).
  const std::string& name() const { return name_; }
  // When nothing loaded: each candidate's dlerror(), "; " between them.
  const std::string& load_errors() const { return load_errors_; }

  // Sets `slot` to the entry point `symbol`, or to null, adding it to missing().
  template <typename Pointer>
  void bind(const char* symbol, Pointer& slot) {
    slot = reinterpret_cast<Pointer>(find(symbol));
  }
  // The symbols bind() did not find, ", " between them; empty when it found every one.
  const std::string& missing() const { return missing_; }

  // Leaves the library loaded until the process ends: the entry points bound from it are kept in
  // a static table and called until exit, and unloading it would pull them from under the threads
  // still in them. Called before the library's first call, which may leave state of its own.
  void keep_loaded() { close_ = false; }

 private:
  SharedLibrary(void* handle, std::string_view description)
      : handle_(handle), loaded_(true), name_(description) {}
  void* find(const char* symbol);

  void* handle_ = nullptr;
  bool loaded_ = false;
  bool close_ = false;
  std::string name_;
  std::string load_errors_;
  std::string missing_;
};

}  // namespace tutti
