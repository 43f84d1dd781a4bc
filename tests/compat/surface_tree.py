"""A planted Paddle installation for the compat-surface tests: a `paddle` package folder
with a compat header tree, a real shared library (built by g++) and a fake interpreter
that answers the Paddle lookup and the proxy probe as a real one would."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

COMPAT = "include/paddle/phi/api/include/compat"

TENSOR_BASE_H = """\
#pragma once
#include <c10/core/Device.h>
namespace at {
class PADDLE_API TensorBase {
 public:
  TensorBase() = default;
  /* a comment with { braces } and a "string {" */
  int64_t numel() const { return 0; }  // inline
  template <typename T, std::enable_if_t<!std::is_const_v<T>, int> = 0>
  const T* const_data_ptr() const;
  template <typename T>
  T* mutable_data_ptr() const;
  template <typename T>
  T* data_ptr() const;
  const void* raw() const {
    return nullptr;
  }
 protected:
  int x_{0};
};
template <typename T>
T* TensorBase::data_ptr() const {
  return nullptr;
}
}  // namespace at
"""

TENSOR_H = """\
#pragma once
#include <ATen/core/TensorBase.h>
namespace at {
class Tensor : public TensorBase {
 public:
  Tensor() = default;
  explicit Tensor(const TensorBase& base) : TensorBase(base), y_{1} {}
  template <typename T, std::enable_if_t<!std::is_const_v<T>, int> = 0>
  const T* const_data_ptr() const;
  using TensorBase::numel;
  Tensor& operator=(const Tensor& x) & { return *this; }
  bool operator==(const Tensor& o) const;
 private:
  int y_;
};
const Tensor kEmpty = Tensor();
template <typename R>
struct traits {};
template <typename R, typename... Args>
struct traits<R (*)(Args...)> : public traits<R(Args...)> {};
template <typename T>
T convert(const Tensor& t, int tag);
template <>
inline int convert(const Tensor& t, int tag) {
  return tag;
}
std::ostream& operator<<(std::ostream& os, const Tensor& t);
}  // namespace at
namespace torch {
using at::Tensor;
}  // namespace torch
"""

GUARD_H = """\
#pragma once
namespace c10::cuda {
struct CUDAGuard {
  explicit CUDAGuard(int index) : index_(index) {}
  void set_index(int i);
  struct Inner {
    int depth() const { return 1; }
  };
 private:
  int index_;
};
}  // namespace c10::cuda
namespace at::cuda {
using c10::cuda::CUDAGuard;
}  // namespace at::cuda
"""

SCALAR_H = """\
#pragma once
#define FORALL_TYPES(_) \\
  _(float, Float)       \\
  _(double, Double)
namespace c10 {
enum class ScalarType : int8_t {
#define ENUM_VAL(t, n) n,
  FORALL_TYPES(ENUM_VAL)
  Undefined
};
#define DEFINE_CONSTANT(t, name) constexpr ScalarType k##name = ScalarType::name;
FORALL_TYPES(DEFINE_CONSTANT)
#undef DEFINE_CONSTANT
inline const char* toString(ScalarType t) { return "x"; }
}  // namespace c10
namespace at {
using namespace c10;
}  // namespace at
"""

LIBRARY_H = """\
#pragma once
namespace torch {
class Library {
 public:
  Library& def(const char* schema) &;
  int find_operator();
};
}  // namespace torch
#define TORCH_LIBRARY(ns, m) static void TORCH_LIBRARY_init_##ns(torch::Library& m)
"""

HEADERS = {"ATen/core/TensorBase.h": TENSOR_BASE_H, "ATen/core/TensorBody.h": TENSOR_H,
           "c10/cuda/CUDAGuard.h": GUARD_H, "c10/core/ScalarType.h": SCALAR_H,
           "torch/library.h": LIBRARY_H, "torch/csrc/api/include/torch/all.h": "#pragma once\n"}

# What the planted library defines: TensorBase::const_data_ptr<float> and Library::def,
# nothing of at::Tensor (the const_data_ptr case) nor CUDAGuard::set_index.
LIBRARY_CC = """\
#include <cstdint>
#include <type_traits>
#define PADDLE_API __attribute__((visibility("default")))
namespace at {
class PADDLE_API TensorBase {
 public:
  template <typename T, std::enable_if_t<!std::is_const_v<T>, int> = 0>
  const T* const_data_ptr() const;
};
template <> const float* TensorBase::const_data_ptr<float, 0>() const { return nullptr; }
}
namespace torch {
class Library { public: Library& def(const char* schema) &; int find_operator(); };
Library& Library::def(const char*) & { return *this; }
int Library::find_operator() { return 0; }
}
namespace c10 {
struct Sink {};
struct PADDLE_API Device {
  explicit operator bool() const;
  ~Device();
};
Device::operator bool() const { return true; }
Device::~Device() {}
PADDLE_API Sink& operator<<(Sink& s, const Device&) { return s; }
}
namespace other { int helper() { return 1; } }
"""

PROXY = {"modules": {
    "torch": {"attrs": ["cuda", "ops", "zeros"]},
    "torch.cuda": {"attrs": ["Stream", "is_available"]},
    "torch.testing": {"error": "ModuleNotFoundError: No module named 'paddle.testing'"},
    "torch.ops": {"error": "ModuleNotFoundError: No module named 'paddle.ops'",
                  "attrs": ["load_library"]},
}}


def plant(root: Path, version: str = "9.9.0") -> tuple[Path, Path]:
    """(the fake interpreter, the paddle folder) of a planted installation under root."""
    paddle = root / "site" / "paddle"
    for rel, text in HEADERS.items():
        p = paddle / COMPAT / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (paddle / "libs").mkdir(parents=True)
    if shutil.which("g++"):
        src = root / "lib.cc"
        src.write_text(LIBRARY_CC)
        subprocess.run(["g++", "-shared", "-fPIC", "-std=c++17", "-o",
                        str(paddle / "libs" / "libphi_core.so"), str(src)], check=True)
    record = root / "RECORD"
    record.write_text(f"paddle/__init__.py,sha256=x,1\n{version}\n")
    facts = {"version": version, "dist": "paddlepaddle", "root": str(paddle),
             "record_sha256": hashlib.sha256(record.read_bytes()).hexdigest()}
    (root / "proxy.json").write_text(json.dumps(PROXY) + "\n")
    (root / "facts.json").write_text(json.dumps(facts) + "\n")
    python = root / "python"
    python.write_text("#!/bin/sh\n"
                      "case \"$*\" in\n"
                      f"  *enable_compat*) cat '{root}/proxy.json' ;;\n"
                      f"  *) cat '{root}/facts.json' ;;\n"
                      "esac\n")
    python.chmod(0o755)
    return python, paddle
