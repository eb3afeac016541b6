// tutti._core's part of tutti.elastic (elastic.cc).
#pragma once

#include <pybind11/pybind11.h>

namespace tutti::python {

// Adds ElasticState, MembershipChanged and _elastic_run to the module.
void bind_elastic(pybind11::module_& m);

}  // namespace tutti::python
