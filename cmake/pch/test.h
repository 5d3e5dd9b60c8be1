// Precompiled for every target that links GoogleTest (cmake/Precompiled.cmake): the product
// headers plus gtest and gmock, which every test includes.
#pragma once

#include "cmake/pch/product.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
