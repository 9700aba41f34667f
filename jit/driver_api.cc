#include "jit/driver_api.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tunejit::jit_internal {
namespace {

#define TUNEJIT_STRINGIFY_INNER_(x) #x
// Stringifies after macro expansion: cuMemAlloc -> "cuMemAlloc_v2", the symbol dlsym needs.
#define TUNEJIT_STRINGIFY_EXPANDED_(x) TUNEJIT_STRINGIFY_INNER_(x)

// cuDriverGetVersion and cuGetProcAddress_v2 are exported under these exact names by every driver
// that has them; everything else by the header-expanded symbol (cuGetProcAddress as fallback).
using GetProcAddressFn = decltype(&::cuGetProcAddress);
using DriverGetVersionFn = decltype(&::cuDriverGetVersion);

constexpr int kMinDriverVersion = 12000;  // cuLibraryLoadData / cuLibraryGetKernel

std::string DriverLibraryName() {
  // For tests and unusual installs: a full path to load instead of the system's libcuda.so.1.
  const char* override_path = std::getenv("TUNEJIT_CUDA_DRIVER");
  return override_path != nullptr && *override_path != '\0' ? override_path : "libcuda.so.1";
}

std::string VersionText(int version) {
  return absl::StrCat(version / 1000, ".", (version % 1000) / 10);
}

// Resolves every function of the table. Returns the names that could not be found.
std::vector<std::string> ResolveAll(void* lib, GetProcAddressFn get_proc, int ask_version,
                                    DriverApi& api) {
  std::vector<std::string> missing;
  auto resolve = [&](const char* name, const char* symbol, void** slot) {
    // The exported symbol the header maps the name to is exactly the ABI this file was compiled
    // against (cuMemAlloc -> cuMemAlloc_v2, cuGraphInstantiate -> cuGraphInstantiateWithFlags,
    // cuCtxSynchronize -> the void one). cuGetProcAddress is only the fallback: asked for
    // "cuCtxSynchronize" at CUDA 13 it returns cuCtxSynchronize_v2(CUcontext), a different
    // signature, so a call through it synchronizes a garbage context.
    void* fn = dlsym(lib, symbol);
    if (fn == nullptr && get_proc != nullptr) {
      std::string base(symbol);
      if (size_t v = base.rfind("_v");
          v != std::string::npos && v + 2 < base.size() &&
          base.find_first_not_of("0123456789", v + 2) == std::string::npos) {
        base.resize(v);
      }
      CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      if (get_proc(base.c_str(), &fn, ask_version, CU_GET_PROC_ADDRESS_DEFAULT, &found) !=
              CUDA_SUCCESS ||
          found != CU_GET_PROC_ADDRESS_SUCCESS) {
        fn = nullptr;
      }
    }
    if (fn == nullptr) missing.push_back(name);
    *slot = fn;
  };
#define TUNEJIT_RESOLVE_(name) \
  resolve(#name, TUNEJIT_STRINGIFY_EXPANDED_(name), reinterpret_cast<void**>(&api.name));
  TUNEJIT_DRIVER_FUNCTIONS(TUNEJIT_RESOLVE_)
#undef TUNEJIT_RESOLVE_
  return missing;
}

std::string ErrorNameFrom(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (api.cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  std::string out = name != nullptr ? name : absl::StrCat("CUresult ", static_cast<int>(result));
  if (text != nullptr) absl::StrAppend(&out, " (", text, ")");
  return out;
}

// For errors before the table exists: the name from the library itself, if it has cuGetErrorName.
std::string ErrorNameVia(void* lib, CUresult result) {
  using GetErrorNameFn = decltype(&::cuGetErrorName);
  auto get_name = reinterpret_cast<GetErrorNameFn>(dlsym(lib, "cuGetErrorName"));
  const char* name = nullptr;
  if (get_name != nullptr && get_name(result, &name) == CUDA_SUCCESS && name != nullptr) {
    return name;
  }
  return absl::StrCat("CUresult ", static_cast<int>(result));
}

absl::StatusOr<DriverApi> Load() {
  const std::string library = DriverLibraryName();
  dlerror();
  // Never dlclose'd: handles in static objects may call the driver during exit.
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(absl::StrCat(
        "no CUDA driver found (", library, " could not be loaded: ",
        why != nullptr ? why : "unknown error", "); this command needs an NVIDIA GPU"));
  }
  auto get_version = reinterpret_cast<DriverGetVersionFn>(dlsym(lib, "cuDriverGetVersion"));
  if (get_version == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA driver found (", library,
                     " has no cuDriverGetVersion); this command needs an NVIDIA GPU"));
  }
  int version = 0;
  if (CUresult r = get_version(&version); r != CUDA_SUCCESS) {
    // The toolkit's stub libcuda (common in GPU-less containers) fails here, with
    // CUDA_ERROR_STUB_LIBRARY.
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA device (cuDriverGetVersion failed: ", ErrorNameVia(lib, r), " in ",
                     library, "); this command needs an NVIDIA GPU"));
  }
  if (version < kMinDriverVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("the CUDA driver supports CUDA ", VersionText(version), "; tunejit needs ",
                     VersionText(kMinDriverVersion), " or newer (built with CUDA ",
                     VersionText(CUDA_VERSION), "): update the NVIDIA driver"));
  }
  DriverApi api;
  api.driver_version = version;
  auto get_proc = reinterpret_cast<GetProcAddressFn>(dlsym(lib, "cuGetProcAddress_v2"));
  api.via_get_proc_address = get_proc != nullptr;
  // Ask for the ABI of whichever is older, the driver or our headers: both know that version.
  std::vector<std::string> missing =
      ResolveAll(lib, get_proc, std::min(version, CUDA_VERSION), api);
  if (!missing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("the CUDA driver (", VersionText(version),
                                                      ") lacks ", absl::StrJoin(missing, ", "),
                                                      "; update the NVIDIA driver"));
  }
  if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no CUDA device (cuInit failed: ", ErrorNameFrom(api, r), "); driver ", library,
        " supports CUDA ", VersionText(version), "; this command needs an NVIDIA GPU"));
  }
  return api;
}

std::atomic<const DriverApi*> g_loaded{nullptr};

}  // namespace

absl::StatusOr<const DriverApi*> LoadDriver() {
  // Loaded once, thread-safe (magic static), intentionally leaked.
  static const absl::StatusOr<DriverApi>* const loaded = [] {
    auto* result = new absl::StatusOr<DriverApi>(Load());
    if (result->ok()) g_loaded.store(&**result, std::memory_order_release);
    return result;
  }();
  if (!loaded->ok()) return loaded->status();
  return &**loaded;
}

const DriverApi* LoadedDriverOrNull() { return g_loaded.load(std::memory_order_acquire); }

}  // namespace tunejit::jit_internal
