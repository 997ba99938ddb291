package ghapi

// GraphQLURLForTest exposes graphqlURL to the external tests.
var GraphQLURLForTest = graphqlURL
