// Errors raised by the native core.
//
// The core (native/engine/) is plain C++ with no N-API in it. It
// reports bad input by throwing DbError, which carries a stable code that JavaScript sees as
// `err.code`. The N-API layer catches DbError, std::bad_alloc and any other std::exception at
// every entry point, so no C++ exception ever crosses into N-API.
#pragma once

#include <stdexcept>
#include <string>

namespace ce {

class DbError : public std::runtime_error {
 public:
  DbError(const char* code, const std::string& message) : std::runtime_error(message), code_(code) {}
  const char* code() const { return code_; }

 private:
  const char* code_;
};

namespace err {
inline constexpr const char* kTupleFormat = "ER_TUPLE_FORMAT";
inline constexpr const char* kTupleTooLarge = "ER_TUPLE_TOO_LARGE";
inline constexpr const char* kFieldMissing = "ER_FIELD_MISSING";
inline constexpr const char* kFieldType = "ER_FIELD_TYPE";
inline constexpr const char* kKeyType = "ER_KEY_TYPE";
inline constexpr const char* kKeyPartCount = "ER_KEY_PART_COUNT";
inline constexpr const char* kKeyTooLarge = "ER_KEY_TOO_LARGE";
inline constexpr const char* kDuplicateKey = "ER_DUPLICATE_KEY";
inline constexpr const char* kNoSuchIndex = "ER_NO_SUCH_INDEX";
inline constexpr const char* kIndexExists = "ER_INDEX_EXISTS";
inline constexpr const char* kNoPrimaryIndex = "ER_NO_PRIMARY_INDEX";
inline constexpr const char* kIteratorType = "ER_ITERATOR_TYPE";
inline constexpr const char* kMoreThanOneTuple = "ER_MORE_THAN_ONE_TUPLE";
inline constexpr const char* kUnsupported = "ER_UNSUPPORTED";
inline constexpr const char* kSpaceDropped = "ER_SPACE_DROPPED";
inline constexpr const char* kIllegalParams = "ER_ILLEGAL_PARAMS";
inline constexpr const char* kTransaction = "ER_TRANSACTION";
inline constexpr const char* kMemory = "ER_MEMORY_ISSUE";
inline constexpr const char* kUpdateOp = "ER_UPDATE_OP";
inline constexpr const char* kUpdateField = "ER_UPDATE_FIELD";
inline constexpr const char* kUpdateIntegerOverflow = "ER_UPDATE_INTEGER_OVERFLOW";
inline constexpr const char* kCantUpdatePrimaryKey = "ER_CANT_UPDATE_PRIMARY_KEY";
inline constexpr const char* kSpaceFull = "ER_SPACE_FULL";
inline constexpr const char* kIndexBuildAborted = "ER_INDEX_BUILD_ABORTED";
}  // namespace err

}  // namespace ce
