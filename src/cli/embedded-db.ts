// `npm run embedded-db`: the engine package's own command line.
import '@chat-gateway/embedded-mongodb/cli';
