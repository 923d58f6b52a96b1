# Installation: headers, both libraries, the CMake package and simdgrad.pc.
install(TARGETS simdgrad simdgrad_static EXPORT simdgradTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/simdgrad DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
