# The Linux desktop integration (desktop entry, AppStream metainfo, hicolor icons) and the Debian
# package. An installed kforge is laid out as
#   <prefix>/bin/kforge, kforge-headless
#   <prefix>/libexec/kforge/kforge-worker-*          (CMAKE_INSTALL_LIBEXECDIR)
#   <prefix>/share/kforge/tasks, share/kforge/resources
#   <prefix>/share/applications, share/metainfo, share/icons/hicolor
# and the binaries find the rest relative to themselves (core/CMakeLists.txt), so the tree works
# wherever it is unpacked. `cpack -G DEB` in a build folder makes kforge_<version>_<arch>.deb.

install(FILES packaging/${KFORGE_APP_ID}.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES packaging/${KFORGE_APP_ID}.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)

# One drawing: the window icon compiled into the app (resources/CMakeLists.txt) is the menu's icon.
set(KFORGE_ICON_SVG ${PROJECT_SOURCE_DIR}/resources/icons/kforge.svg)
install(FILES ${KFORGE_ICON_SVG} DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
# Fixed-size PNGs for menus and docks that do not draw SVG, rendered at build time.
set(KFORGE_ICON_SIZES 16 24 32 48 64 128 256)
find_program(KFORGE_RSVG_CONVERT rsvg-convert)
set(KFORGE_ICON_PNGS "")
if(KFORGE_RSVG_CONVERT)
  foreach(size IN LISTS KFORGE_ICON_SIZES)
    set(png ${CMAKE_BINARY_DIR}/icons/hicolor/${size}x${size}/apps/kforge.png)
    add_custom_command(OUTPUT ${png}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/icons/hicolor/${size}x${size}/apps
      COMMAND ${KFORGE_RSVG_CONVERT} --width ${size} --height ${size} --output ${png} ${KFORGE_ICON_SVG}
      DEPENDS ${KFORGE_ICON_SVG}
      COMMENT "Rendering the ${size}x${size} icon"
      VERBATIM)
    install(FILES ${png} DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps)
    list(APPEND KFORGE_ICON_PNGS ${png})
  endforeach()
  add_custom_target(kforge_icons ALL DEPENDS ${KFORGE_ICON_PNGS})
  # Building `kforge` alone gives everything `cmake --install` and cpack need.
  add_dependencies(kforge kforge_icons)
else()
  message(STATUS "No rsvg-convert: the package gets the scalable icon only (packaging/install-deps.sh "
                 "installs librsvg2-bin)")
endif()

# The Debian package. Dependencies are the shared libraries the binaries link, as dpkg-shlibdeps
# finds them (dpkg-dev); libraries that no Debian package owns, such as NVRTC and CUPTI from
# NVIDIA's CUDA toolkit in /usr/local/cuda that the CUDA worker links, are left out, so the package
# installs and runs without a GPU, an NVIDIA driver or the toolkit (the CUDA worker then reports
# what is missing in `kforge doctor`).
# CPack installs a DEB under /usr.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kforge)
set(CPACK_PACKAGE_VENDOR kforge)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
  "kforge evolves GPU kernels (CUDA, OpenCL): candidates proposed by language\n"
  "models, offline tuners or you are compiled, verified against a trusted\n"
  "reference, timed and profiled in sandboxed worker processes, and the search\n"
  "is shown live in a Qt workbench so that you can steer it. kforge-headless\n"
  "runs the same commands on servers without a display.")
set(KFORGE_PACKAGE_MAINTAINER "kforge maintainers <maintainers@kforge.invalid>"
    CACHE STRING "The Maintainer field of the Debian package")
set(CPACK_PACKAGE_CONTACT "${KFORGE_PACKAGE_MAINTAINER}")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# An OpenCL driver gives the OpenCL worker a device; PoCL runs kernels on the CPU of any machine.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "pocl-opencl-icd | opencl-icd")
# `kforge import` and PyTorch references run Python with PyTorch ($KFORGE_PYTHON).
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3")
# `package_source` (which include(CPack) adds) leaves out what .gitignore does: builds, .venv, .git.
set(CPACK_SOURCE_GENERATOR TXZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\.git/" "/build[^/]*/" "/\\.venv/" "/\\.gpu/" "/\\.whl/" "/\\.gl/" "/CMakeUserPresets\\.json$")
include(CPack)
