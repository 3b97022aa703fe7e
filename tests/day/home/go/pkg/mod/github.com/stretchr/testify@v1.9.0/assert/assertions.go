package assert

// Equal asserts that two objects are equal.
func Equal(t TestingT, expected, actual interface{}, msgAndArgs ...interface{}) bool {
	return ObjectsAreEqual(expected, actual)
}
