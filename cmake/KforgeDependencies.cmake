# Finds kforge's dependencies. Required ones stop the configure with the package to install;
# CUDA and OpenCL are optional and only decide which workers are built.

find_package(nlohmann_json 3.10 REQUIRED)
find_package(muparser REQUIRED)
find_package(Threads REQUIRED)

if(NOT KFORGE_WORKERS_ONLY)
  # Svg: plots and views export to SVG as well as PNG.
  find_package(Qt6 6.4 REQUIRED COMPONENTS Core Widgets Test PrintSupport Network Svg)
  # API keys from the system keyring (Secret Service, KWallet...).
  find_package(Qt6Keychain REQUIRED)
  find_package(SQLite3 REQUIRED)
  find_package(CURL REQUIRED)
  find_package(QCustomPlotQt6 REQUIRED)
  # QScintilla ships no CMake config on Debian: find it by name.
  find_library(QSCINTILLA_LIBRARY NAMES qscintilla2_qt6 REQUIRED)
  find_path(QSCINTILLA_INCLUDE_DIR Qsci/qsciscintilla.h PATH_SUFFIXES x86_64-linux-gnu/qt6 qt6 REQUIRED)
  add_library(kforge_qscintilla INTERFACE)
  target_link_libraries(kforge_qscintilla INTERFACE ${QSCINTILLA_LIBRARY} Qt6::Widgets Qt6::PrintSupport)
  target_include_directories(kforge_qscintilla INTERFACE ${QSCINTILLA_INCLUDE_DIR})
  qt_standard_project_setup()
endif()

# OpenCL: the ICD loader and headers; PoCL provides a CPU device on any machine.
find_package(OpenCL)
set(KFORGE_HAVE_OPENCL ${OpenCL_FOUND})

# CUDA toolkit: NVRTC and CUPTI are needed by the CUDA worker only. libcuda itself is loaded at run
# time by that worker, so a machine without the NVIDIA driver still builds and runs everything.
if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)
set(KFORGE_HAVE_CUDA_TOOLKIT ${CUDAToolkit_FOUND})
set(KFORGE_HAVE_NVRTC OFF)
set(KFORGE_HAVE_CUPTI OFF)
if(CUDAToolkit_FOUND)
  if(TARGET CUDA::nvrtc)
    set(KFORGE_HAVE_NVRTC ON)
  endif()
  if(TARGET CUDA::cupti)
    set(KFORGE_HAVE_CUPTI ON)
  endif()
endif()
